function greet(name: string): string {
  return `Hello, ${name}!`;
}

const input: string = require("fs").readFileSync(0, "utf8");
const name: string = input.split("\n")[0].trim();
console.log(greet(name));

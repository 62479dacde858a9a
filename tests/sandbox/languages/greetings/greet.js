"use strict";
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
rl.once("line", (name) => {
  console.log(`Hello, ${name.trim()}!`);
  rl.close();
});

use std::io::{self, BufRead};

fn greet(name: &str) -> String {
    format!("Hello, {}!", name)
}

fn main() {
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line).expect("stdin");
    println!("{}", greet(line.trim_end()));
}

<?php
function greet(string $name): string
{
    return "Hello, {$name}!";
}

$name = trim((string) fgets(STDIN));
echo greet($name), PHP_EOL;

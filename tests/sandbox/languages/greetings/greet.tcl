proc greet {name} {
    return "Hello, $name!"
}

gets stdin name
puts [greet [string trim $name]]

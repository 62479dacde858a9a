def greet(name)
  "Hello, #{name}!"
end

name = $stdin.gets&.chomp || "world"
puts greet(name)

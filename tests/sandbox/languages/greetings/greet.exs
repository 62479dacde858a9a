defmodule Greeter do
  def greet(name), do: "Hello, #{name}!"
end

:stdio
|> IO.read(:line)
|> String.trim()
|> Greeter.greet()
|> IO.puts()

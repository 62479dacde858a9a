local function greet(name)
  return ("Hello, %s!"):format(name)
end

local name = io.read("l") or "world"
print(greet(name))

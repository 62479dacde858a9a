program Greet;

var
  name: string;

begin
  ReadLn(name);
  WriteLn('Hello, ', name, '!');
end.

-module(main).
-export([main/0]).

greet(Name) -> "Hello, " ++ Name ++ "!".

main() ->
    Line = io:get_line(""),
    Name = string:trim(Line),
    io:format("~s~n", [greet(Name)]).

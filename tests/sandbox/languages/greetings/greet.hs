module Main (main) where

greet :: String -> String
greet name = "Hello, " ++ name ++ "!"

main :: IO ()
main = getLine >>= putStrLn . greet . takeWhile (/= '\r')

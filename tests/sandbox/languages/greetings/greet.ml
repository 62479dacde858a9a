let greet name = Printf.sprintf "Hello, %s!" name

let () =
  let name = try String.trim (input_line stdin) with End_of_file -> "world" in
  print_endline (greet name)

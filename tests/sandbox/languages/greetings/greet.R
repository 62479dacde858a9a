greet <- function(name) paste0("Hello, ", name, "!")

con <- file("stdin")
name <- readLines(con, n = 1)
close(con)
cat(greet(trimws(name)), "\n", sep = "")

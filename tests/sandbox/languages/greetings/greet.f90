program greet
  implicit none
  character(len=256) :: name
  read (*, '(A)') name
  write (*, '(A)') 'Hello, ' // trim(name) // '!'
end program greet

(use-modules (ice-9 rdelim))

(define (greet name)
  (string-append "Hello, " name "!"))

(display (greet (read-line)))
(newline)

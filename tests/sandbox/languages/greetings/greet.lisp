(defun greet (name)
  (format nil "Hello, ~a!" name))

(let ((name (read-line *standard-input* nil "world")))
  (format t "~a~%" (greet (string-trim '(#\Space #\Return) name))))

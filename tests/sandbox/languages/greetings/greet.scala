import scala.io.StdIn

object Greeter {
  def greet(name: String): String = s"Hello, $name!"

  def main(args: Array[String]): Unit = {
    val name = Option(StdIn.readLine()).map(_.trim).getOrElse("world")
    println(greet(name))
  }
}

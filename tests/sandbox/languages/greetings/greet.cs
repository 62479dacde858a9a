using System;

namespace Greetings
{
    public static class Greeter
    {
        public static void Main(string[] args)
        {
            string name = Console.ReadLine()?.Trim() ?? "world";
            Console.WriteLine($"Hello, {name}!");
        }
    }
}

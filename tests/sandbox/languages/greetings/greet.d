import std.stdio : readln, writefln;
import std.string : strip;

void main()
{
    auto name = readln().strip();
    writefln("Hello, %s!", name);
}

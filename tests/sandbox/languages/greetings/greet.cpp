#include <iostream>
#include <string>

namespace greeting {
std::string line(const std::string &who) { return "Hello, " + who + "!"; }
}

int main() {
    std::string name;
    std::getline(std::cin, name);
    std::cout << greeting::line(name.empty() ? "world" : name) << '\n';
}

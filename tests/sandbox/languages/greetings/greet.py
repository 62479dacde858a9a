import sys

name = sys.stdin.readline().strip() or "world"
print(f"Hello, {name}!")

from calc import add, mean

assert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}, expected 5"
assert mean([1, 2, 3]) == 2
print("all tests passed")

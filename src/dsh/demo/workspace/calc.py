"""A tiny calculator module with one bug for the dsh demo."""


def add(a, b):
    return a - b


def mean(values):
    return sum(values) / len(values)

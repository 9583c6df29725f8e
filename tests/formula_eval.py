"""Evaluators of exported formulas, shared by the tests of sknd.inspection and of the
estimators' exports: numpy expressions with ``eval``, Earth Engine expressions with a
tiny parser of their grammar (so that a test checks meaning as well as syntax)."""

import re

import numpy as np

from sknd.inspection import band_identifiers


def eval_numpy(formula, names, X):
    env = dict(zip(band_identifiers(names), X.T))
    return eval(formula, {"__builtins__": {}, "np": np}, env)


# --- a tiny parser of the Earth Engine expression grammar -------------------
# Arithmetic subset of ee.Image.expression: numbers (plain decimals), b('name')
# / b("name") / b(index) band access, calls of image functions, + - * / % **,
# unary minus and parentheses. It evaluates the expression with numpy so the
# test checks the meaning as well as the syntax.

_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d+\.\d*|\.\d+|\d+)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<string>'[^']*'|\"[^\"]*\")|(?P<op>\*\*|[-+*/%(),]))"
)
_GEE_FUNCTIONS = {"sqrt": np.sqrt, "log": np.log, "exp": np.exp, "abs": np.abs}


def _tokenize(text):
    tokens, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise SyntaxError(f"unexpected character at {position}: {text[position:]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class GEEParser:
    def __init__(self, text, bands):
        self.tokens, self.pos, self.bands = _tokenize(text), 0, bands

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self, value=None):
        kind, text = self.peek()
        if kind is None or (value is not None and text != value):
            raise SyntaxError(f"expected {value!r}, got {text!r}")
        self.pos += 1
        return kind, text

    def parse(self):
        value = self.additive()
        if self.pos != len(self.tokens):
            raise SyntaxError(f"trailing tokens {self.tokens[self.pos :]}")
        return value

    def additive(self):
        value = self.multiplicative()
        while self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            rhs = self.multiplicative()
            value = value + rhs if op == "+" else value - rhs
        return value

    def multiplicative(self):
        value = self.unary()
        while self.peek()[1] in ("*", "/", "%"):
            op = self.take()[1]
            rhs = self.unary()
            value = value * rhs if op == "*" else value / rhs if op == "/" else value % rhs
        return value

    def unary(self):
        if self.peek()[1] in ("-", "+"):
            op = self.take()[1]
            value = self.unary()
            return -value if op == "-" else value
        return self.power()

    def power(self):
        base = self.primary()
        if self.peek()[1] == "**":
            self.take()
            return base ** self.unary()
        return base

    def primary(self):
        kind, text = self.peek()
        if kind == "number":
            self.take()
            return float(text)
        if text == "(":
            self.take()
            value = self.additive()
            self.take(")")
            return value
        if kind == "name":
            self.take()
            self.take("(")
            if text == "b":
                arg_kind, arg = self.take()
                self.take(")")
                if arg_kind == "string":
                    return self.bands[arg[1:-1]]
                if arg_kind == "number" and arg.isdigit():
                    return list(self.bands.values())[int(arg)]
                raise SyntaxError(f"bad b() argument {arg!r}")
            if text not in _GEE_FUNCTIONS:
                raise SyntaxError(f"unknown function {text!r}")
            value = self.additive()
            self.take(")")
            return _GEE_FUNCTIONS[text](value)
        raise SyntaxError(f"unexpected token {text!r}")


def eval_gee(formula, names, X):
    return GEEParser(formula, dict(zip(names, X.T))).parse()

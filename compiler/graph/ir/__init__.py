"""The graph's IR: types, expressions, their walks, the ops, type inference, the text
form and numpy evaluation (see compiler/graph/__init__.py)."""

"""Makes the mutants of a change: `python -m probegate_mutants.generate < request.json`.

The request names files (path, post-change source, the lines the change added or modified); the
answer lists one mutant per mutation cosmic-ray's operators (core and `probegate/`) can make whose
position starts on one of those lines, as the whole mutated source. Nothing is run: probegate
evaluates each mutant itself, as a submission. Mutants that do not compile, or that equal the
source or an earlier mutant, are left out and counted.

`--examples` instead checks every selected operator on its own documented examples (the way
cosmic-ray's test suite does) and exits 1 on the first that does not hold."""

import json
import sys

# parso.tree must be imported before cosmic_ray.plugins loads the providers: their modules import
# `parso.python.tree`, which otherwise meets a partly initialised parso.tree (cosmic-ray 8.7.0).
import parso.tree  # noqa: F401
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code
from cosmic_ray.plugins import get_operator, operator_names

# cosmic-ray's core operators, chosen: every comparison turned into its boundary twin and its
# negation, arithmetic swapped within its family, the unary and boolean ones, exception
# replacement, constants, loops run zero times, break/continue. Left out: bit operators and
# cross-family arithmetic (mostly crash mutants the official tests kill anyway) and the
# VariableReplacer/Inserter (random values: mutants that differ run to run).
CORE = [
    *(f"core/ReplaceComparisonOperator_{a}_{b}" for a, b in [
        ("Lt", "LtE"), ("Lt", "GtE"), ("LtE", "Lt"), ("LtE", "Gt"), ("Gt", "GtE"), ("Gt", "LtE"), ("GtE", "Gt"), ("GtE", "Lt"),
        ("Eq", "NotEq"), ("NotEq", "Eq"), ("Is", "IsNot"), ("IsNot", "Is"),
    ]),
    *(f"core/ReplaceBinaryOperator_{a}_{b}" for a, b in [
        ("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"), ("FloorDiv", "Div"), ("Div", "FloorDiv"),
        ("Mod", "FloorDiv"), ("Pow", "Mul"), ("Mul", "Add"), ("Add", "Mul"),
    ]),
    "core/ReplaceUnaryOperator_USub_UAdd",
    "core/ReplaceUnaryOperator_Delete_Not",
    "core/AddNot",
    "core/ReplaceTrueWithFalse",
    "core/ReplaceFalseWithTrue",
    "core/ReplaceAndWithOr",
    "core/ReplaceOrWithAnd",
    "core/ReplaceBreakWithContinue",
    "core/ReplaceContinueWithBreak",
    "core/ExceptionReplacer",
    "core/NumberReplacer",
    "core/ZeroIterationForLoop",
]


# The general operators probegate adds (cosmic-ray has neither), run last.
GENERAL = ["probegate/ReplaceReturnValue", "probegate/RemoveStatement"]


def default_operators():
    """probegate's domain operators, the selected core ones, then the general ones: of two
    operators that make the same mutant, the first names it (removing `dist.all_reduce(t)` is a
    RemoveCollective mutant, not a RemoveStatement one). Fails when the provider is not installed."""
    probegate = [n for n in operator_names() if n.startswith("probegate/")]
    if not probegate:
        raise SystemExit("probegate_mutants: the 'probegate' cosmic-ray operator provider is not installed in this interpreter; install python/probegate_mutants into it (pip install --no-deps python/probegate_mutants)")
    return [n for n in probegate if n not in GENERAL] + CORE + GENERAL


def positions(source, operator):
    """The start line of each occurrence of `operator` in `source`, in cosmic-ray's occurrence order."""
    out = []
    for node in ast_nodes(get_ast(source)):
        for start, _end in operator.mutation_positions(node):
            out.append(start)
    return out


def mutants_of(path, source, lines, names):
    """The mutants of one file whose position starts on one of `lines`, and the counts left out."""
    wanted = set(lines)
    seen = {source}
    out, invalid, duplicate = [], 0, 0
    for name in names:
        operator = get_operator(name)()
        per_line = {}
        for occurrence, (line, column) in enumerate(positions(source, operator)):
            if line not in wanted:
                continue
            nth = per_line.get(line, 0)
            per_line[line] = nth + 1
            mutated = mutate_code(source, operator, occurrence)
            if mutated is None or mutated in seen:
                duplicate += mutated is not None
                continue
            try:
                compile(mutated, path, "exec")
            except SyntaxError:
                invalid += 1
                continue
            seen.add(mutated)
            out.append({"operator": name, "path": path, "line": line, "column": column, "occurrence": nth, "source": mutated})
    return out, invalid, duplicate


def check_examples(names):
    """Every example of every operator named holds; returns the failures as lines."""
    failures = []
    for name in names:
        op_class = get_operator(name)
        for ex in op_class.examples():
            got = mutate_code(ex.pre_mutation_code, op_class(**ex.operator_args), ex.occurrence)
            want = None if got is None and ex.pre_mutation_code == ex.post_mutation_code else ex.post_mutation_code
            if got != want:
                failures.append(f"{name}: {ex.pre_mutation_code!r} occurrence {ex.occurrence} gave {got!r}, expected {ex.post_mutation_code!r}")
    return failures


def main(argv):
    if argv[1:2] == ["--examples"]:
        names = [n for n in operator_names() if n.startswith("probegate/")]
        failures = check_examples(names)
        print(json.dumps({"operators": names, "failures": failures}))
        return 1 if failures or not names else 0
    request = json.load(sys.stdin)
    names = request.get("operators") or default_operators()
    result = {"operators": names, "mutants": [], "invalid": 0, "duplicate": 0}
    for f in request["files"]:
        mutants, invalid, duplicate = mutants_of(f["path"], f["source"], f["lines"], names)
        result["mutants"].extend(mutants)
        result["invalid"] += invalid
        result["duplicate"] += duplicate
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

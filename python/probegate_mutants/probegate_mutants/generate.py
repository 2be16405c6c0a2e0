"""Makes the mutants of a change: `python -m probegate_mutants.generate < request.json`.

The request names files (path, post-change source, the lines the change added or modified); the
answer lists one mutant per mutation cosmic-ray's operators (core and `probegate/`) can make whose
position starts on one of those lines, as the whole mutated source. Nothing is run: probegate
evaluates each mutant itself, as a submission. Mutants that do not compile, or that equal the
source or an earlier mutant, are left out and counted.

`--examples` instead checks every selected operator on its own documented examples (the way
cosmic-ray's test suite does) and exits 1 on the first that does not hold."""

import ast
import json
import sys

# parso.tree must be imported before cosmic_ray.plugins loads the providers: their modules import
# `parso.python.tree`, which otherwise meets a partly initialised parso.tree (cosmic-ray 8.7.0).
import parso.tree  # noqa: F401
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code
from cosmic_ray.plugins import get_operator, operator_names

from .resources import RESOURCE_OPERATORS

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
    return [n for n in probegate if n not in GENERAL and n not in RESOURCES] + CORE + GENERAL


# Value-keeping time, memory and traffic mutants (resources.py): a repository gate's set only.
RESOURCES = [f"probegate/{op.__name__}" for op in RESOURCE_OPERATORS]


def gate_operators():
    """A repository gate's operators: the default ones, then the resource ones (of two that make the
    same mutant the first names it, so a value-changing operator keeps its name)."""
    return default_operators() + RESOURCES


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


def function_lines(source, functions):
    """The lines of the functions named (`name` at module level or in a class, `Class.method`), and
    the names not found, so a gate's `upstream.functions` that names nothing is an error, not 0 mutants."""
    tree = ast.parse(source)
    wanted, found, lines = set(functions), set(), set()

    def visit(body, owner):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = {node.name, f"{owner}.{node.name}"} if owner else {node.name}
                hit = names & wanted
                if hit:
                    found.update(hit)
                    lines.update(range(node.lineno, node.end_lineno + 1))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, node.name)

    visit(tree.body, None)
    return sorted(lines), sorted(wanted - found)


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
    names = request.get("operators") or (gate_operators() if request.get("set") == "gate" else default_operators())
    unknown = sorted(set(names) - set(operator_names()))
    if unknown:
        raise SystemExit(f"probegate_mutants: no operator {', '.join(unknown)} (known: core/… and probegate/…, as the report names them)")
    result = {"operators": names, "mutants": [], "invalid": 0, "duplicate": 0}
    missing = []
    for f in request["files"]:
        lines = f["lines"]
        if f.get("functions"):
            inside, absent = function_lines(f["source"], f["functions"])
            lines = sorted(set(lines) & set(inside))
            missing.append({"path": f["path"], "absent": absent})
        mutants, invalid, duplicate = mutants_of(f["path"], f["source"], lines, names)
        result["mutants"].extend(mutants)
        result["invalid"] += invalid
        result["duplicate"] += duplicate
    if missing:
        # A name none of the files defines is an error the caller reports, naming the field.
        result["functionsMissing"] = sorted(set.intersection(*(set(m["absent"]) for m in missing)))
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

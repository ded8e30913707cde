#!/usr/bin/env python3
"""Checks the monitoring assets against what errorbusd serves and what errorbusctl can do.

  scripts/lib/monitoring.py [--promtool promtool]

Reads etc/prometheus/metric-names.txt (the metric families errorbusd serves, with their labels)
and checks, listing every problem and exiting 1 if there is one:

- every PromQL query of etc/prometheus/errorbus-alerts.yml, errorbus-recording.yml and
  etc/grafana/errorbus-dashboard.json uses only those metric names (a histogram's as NAME_bucket,
  _sum, _count; and Prometheus's own up), only labels those families carry (plus instance and
  job, and le on a _bucket) in its matchers, and only recording rules that errorbus-recording.yml
  records;
- every alert has for:, labels.severity (critical, warning or info) and the annotations summary
  and description, and its description names at least one errorbusctl command, each of which
  errorbusctl has (Sources/errorbusctl);
- every alert is tested in Tests/monitoring/*.test.yml firing (an expected alert) and resolved
  (no alert, at a later time than one firing), and every recording rule is queried by a
  promql_expr_test;
- the dashboard: schemaVersion, a datasource variable DS_PROMETHEUS that every panel and query
  uses, a host variable, unique panel ids, panels that do not overlap, a query in every panel;
  and promtool parses each of its queries (Grafana's $variables replaced by values), as it parses
  the rules.
"""
import argparse, glob, json, os, re, subprocess, sys, tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = "etc/prometheus/metric-names.txt"
ALERTS = "etc/prometheus/errorbus-alerts.yml"
RECORDING = "etc/prometheus/errorbus-recording.yml"
DASHBOARD = "etc/grafana/errorbus-dashboard.json"
TESTS = "Tests/monitoring/*.test.yml"
CONTROL_SOURCES = "Sources/errorbusctl/*.swift"

# Series Prometheus makes itself for each target, not errorbusd.
PROMETHEUS_SERIES = {"up": set()}
TARGET_LABELS = {"instance", "job"}
SEVERITIES = {"critical", "warning", "info"}
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "offset", "inf", "nan", "Inf", "NaN"}
# Grafana's variables, as the dashboard's queries use them, and a value each for promtool to parse.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "${host}": ".*", "$host": ".*"}

problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def read_names():
    families = {}
    with open(os.path.join(ROOT, NAMES)) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) not in (2, 3) or fields[1] not in ("counter", "gauge", "histogram"):
                problem(f"{NAMES}:{number}", f"not 'NAME TYPE [LABELS]': {line}")
                continue
            if fields[0] in families:
                problem(f"{NAMES}:{number}", f"{fields[0]} listed twice")
            labels = set(fields[2].split(",")) if len(fields) == 3 else set()
            families[fields[0]] = (fields[1], labels)
    return families


def series_labels(name, families):
    """The labels a series of this name may carry, or None when errorbusd serves no such series."""
    if name in PROMETHEUS_SERIES:
        return PROMETHEUS_SERIES[name] | TARGET_LABELS
    if name in families:
        kind, labels = families[name]
        return None if kind == "histogram" else labels | TARGET_LABELS
    for suffix, extra in (("_bucket", {"le"}), ("_sum", set()), ("_count", set())):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and families.get(base, ("",))[0] == "histogram":
            return families[base][1] | TARGET_LABELS | extra
    return None


STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^{}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
TOKEN = re.compile(r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|[a-zA-Z_:][a-zA-Z0-9_:]*")


def check_query(where, expr, families, recorded):
    """The names and matcher labels of one PromQL query."""
    text = STRING.sub('""', expr)
    text = re.sub(r"\boffset\s+\S+", " ", text)
    used = []
    for match in SELECTOR.finditer(text):
        name = match.group(1)
        labels = MATCHER.findall(match.group(2))
        if not name:
            problem(where, f"a selector without a metric name: {{{match.group(2)}}}")
            continue
        used.append((name, labels))
    text = SELECTOR.sub(" ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = GROUPING.sub(" ", text)
    for match in TOKEN.finditer(text):
        token = match.group(0)
        if token[0].isdigit() or token in KEYWORDS:
            continue
        if re.match(r"\s*\(", text[match.end():]):
            continue  # a function or an aggregation
        used.append((token, []))
    if not used:
        problem(where, f"no metric in the query: {expr}")
    for name, labels in used:
        if ":" in name:
            if name not in recorded:
                problem(where, f"{name} is not recorded by {RECORDING}")
            continue
        allowed = series_labels(name, families)
        if allowed is None:
            problem(where, f"{name} is not a metric errorbusd serves ({NAMES})")
            continue
        for label in labels:
            if label not in allowed:
                problem(where, f"{name} has no label {label} (it has {', '.join(sorted(allowed))})")


def control_commands():
    """errorbusctl's command names: its subcommands' commandName, else the type's name lowercased."""
    sources = {path: open(path).read() for path in glob.glob(os.path.join(ROOT, CONTROL_SOURCES))}
    everything = "\n".join(sources.values())
    listed = re.search(r"subcommands:\s*\[([^\]]*)\]", everything)
    if not listed:
        problem(CONTROL_SOURCES, "no subcommands: [...] list found")
        return set()
    names = set()
    for kind in re.findall(r"(\w+)\.self", listed.group(1)):
        body = re.search(r"struct " + kind + r"\b[^{]*\{(.*?)\n\}", everything, re.S)
        explicit = re.search(r'commandName:\s*"([^"]+)"', body.group(1)) if body else None
        names.add(explicit.group(1) if explicit else kind.lower())
    return names | {"help"}


def load_yaml(path):
    with open(os.path.join(ROOT, path)) as f:
        return yaml.safe_load(f)


def check_rules(families):
    recording = load_yaml(RECORDING)
    recorded = {}
    for group in recording["groups"]:
        for rule in group["rules"]:
            if "record" not in rule:
                problem(RECORDING, f"a rule that records nothing: {rule}")
                continue
            if not re.fullmatch(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", rule["record"]):
                problem(RECORDING, f"{rule['record']} is not named level:metric:operations")
            recorded[rule["record"]] = rule["expr"]
    for name, expr in recorded.items():
        check_query(f"{RECORDING} {name}", expr, families, recorded)

    commands = control_commands()
    alerts = {}
    for group in load_yaml(ALERTS)["groups"]:
        if group["name"] != "errorbus":
            problem(ALERTS, f"group {group['name']}: the alerts' group is errorbus")
        for rule in group["rules"]:
            name = rule.get("alert")
            where = f"{ALERTS} {name}"
            if not name:
                problem(ALERTS, f"a rule that is not an alert: {rule}")
                continue
            alerts[name] = rule
            check_query(where, rule["expr"], families, recorded)
            if "for" not in rule:
                problem(where, "no for:")
            if rule.get("labels", {}).get("severity") not in SEVERITIES:
                problem(where, f"labels.severity must be one of {', '.join(sorted(SEVERITIES))}")
            annotations = rule.get("annotations", {})
            for key in ("summary", "description"):
                if not annotations.get(key, "").strip():
                    problem(where, f"no annotation {key}")
            said = re.findall(r"errorbusctl ([a-z]+)", annotations.get("description", ""))
            if not said:
                problem(where, "the description names no errorbusctl command to run")
            for command in said:
                if command not in commands:
                    problem(where, f"errorbusctl has no command {command} (it has {', '.join(sorted(commands))})")
    return recorded, alerts


def check_tests(recorded, alerts):
    fired, quiet, queried = {}, {}, set()
    files = sorted(glob.glob(os.path.join(ROOT, TESTS)))
    if not files:
        problem(TESTS, "no test file")
    for path in files:
        with open(path) as f:
            document = yaml.safe_load(f)
        for test in document.get("tests", []):
            for case in test.get("alert_rule_test", []) or []:
                time = parse_duration(case["eval_time"])
                (fired if case.get("exp_alerts") else quiet).setdefault(case["alertname"], []).append(time)
            for case in test.get("promql_expr_test", []) or []:
                queried.update(re.findall(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", case["expr"]))
    for name in alerts:
        if name not in fired:
            problem(TESTS, f"alert {name} is never tested firing")
        elif not any(t > min(fired[name]) for t in quiet.get(name, [])):
            problem(TESTS, f"alert {name} is never tested resolved (no alert after it fired)")
    for name in set(fired) | set(quiet):
        if name not in alerts:
            problem(TESTS, f"a test of {name}, which {ALERTS} does not have")
    for name in recorded:
        if name not in queried:
            problem(TESTS, f"recording rule {name} is not tested (no promql_expr_test queries it)")


def parse_duration(text):
    seconds = 0
    for amount, unit in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", str(text)):
        seconds += int(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}[unit]
    return seconds


def check_dashboard(families, recorded, promtool):
    try:
        with open(os.path.join(ROOT, DASHBOARD)) as f:
            dashboard = json.load(f)
    except (OSError, ValueError) as error:
        problem(DASHBOARD, f"not JSON: {error}")
        return
    if not 36 <= dashboard.get("schemaVersion", 0) <= 39:
        problem(DASHBOARD, f"schemaVersion {dashboard.get('schemaVersion')}, expected 36 to 39 (Grafana 9 and 10)")
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    source = variables.get("DS_PROMETHEUS", {})
    if source.get("type") != "datasource" or source.get("query") != "prometheus":
        problem(DASHBOARD, "no datasource variable DS_PROMETHEUS of type prometheus")
    host = variables.get("host")
    if not host:
        problem(DASHBOARD, "no host variable")
    else:
        definition = host.get("query", {}).get("query", "") if isinstance(host.get("query"), dict) else host.get("query", "")
        values = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", definition)
        if not values:
            problem(DASHBOARD, f"the host variable's query is not label_values(SELECTOR, LABEL): {definition}")
        else:
            check_query(f"{DASHBOARD} variable host", values.group(1), families, recorded)

    def uses_source(reference):
        return isinstance(reference, dict) and reference.get("uid") == "${DS_PROMETHEUS}"

    queries = []
    panels = dashboard.get("panels", [])
    ids, cells = set(), {}
    for panel in panels:
        where = f"{DASHBOARD} panel {panel.get('id')} \"{panel.get('title')}\""
        if panel.get("id") in ids:
            problem(where, "a second panel with this id")
        ids.add(panel.get("id"))
        grid = panel.get("gridPos", {})
        if grid.get("x", 0) + grid.get("w", 0) > 24:
            problem(where, "wider than the dashboard's 24 columns")
        for x in range(grid.get("x", 0), grid.get("x", 0) + grid.get("w", 0)):
            for y in range(grid.get("y", 0), grid.get("y", 0) + grid.get("h", 0)):
                if (x, y) in cells:
                    problem(where, f"overlaps panel {cells[(x, y)]}")
                    break
                cells[(x, y)] = panel.get("id")
            else:
                continue
            break
        if panel.get("type") == "row":
            continue
        if not uses_source(panel.get("datasource")):
            problem(where, "its datasource is not ${DS_PROMETHEUS}")
        targets = panel.get("targets", [])
        if not targets:
            problem(where, "no query")
        for target in targets:
            expr = target.get("expr", "")
            if not expr.strip():
                problem(where, f"query {target.get('refId')} has no expr")
                continue
            if not uses_source(target.get("datasource")):
                problem(where, f"query {target.get('refId')}: its datasource is not ${{DS_PROMETHEUS}}")
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            if "$" in expr:
                problem(where, f"query {target.get('refId')} uses a variable the check does not know: {target['expr']}")
            check_query(f"{where} query {target.get('refId')}", expr, families, recorded)
            queries.append((where, target.get("refId"), expr))

    # promtool parses each query as a recording rule's.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{number}:parsed", "expr": expr} for number, (_, _, expr) in enumerate(queries)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        yaml.safe_dump(rules, f)
        f.flush()
        result = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    if result.returncode != 0:
        said = result.stdout + result.stderr
        for number, (where, reference, expr) in enumerate(queries):
            if f"dashboard:query_{number}:" in said or f"rule {number + 1}," in said:
                problem(f"{where} query {reference}", f"promtool cannot parse it: {expr}")
        problem(DASHBOARD, "promtool check rules of the dashboard's queries:\n" + said)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--promtool", default="promtool")
    arguments = parser.parse_args()
    families = read_names()
    recorded, alerts = check_rules(families)
    check_tests(recorded, alerts)
    check_dashboard(families, recorded, arguments.promtool)
    if problems:
        for line in dict.fromkeys(problems):
            print(f"test-monitoring: {line}", file=sys.stderr)
        print(f"test-monitoring: {len(problems)} problem(s)", file=sys.stderr)
        sys.exit(1)
    print(f"monitoring: {len(alerts)} alerts, {len(recorded)} recording rules and the dashboard use only "
          f"the {len(families)} metric families of {NAMES}; every alert tested firing and resolved")


if __name__ == "__main__":
    main()

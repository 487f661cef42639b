"""Validates report JSON files (remat-opt --report-json: a report, or an array of them with
--split-input-file) against a JSON Schema.
Usage: validate.py SCHEMA REPORT.json...; prints one line per report, exits 1 on the first error."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
for path in sys.argv[2:]:
    reports = json.load(open(path))
    for report in reports if isinstance(reports, list) else [reports]:
        errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
        if errors:
            for e in errors:
                print(f"{path}: @{report.get('function')}: {'/'.join(map(str, e.path))}: {e.message}")
            sys.exit(1)
        sections = [k for k in ("raw_plan", "fusion", "ilp", "dtr", "chain", "hierarchical", "host", "candidates", "certificate") if k in report]
        print(f"valid: {report['strategy']} {' '.join(sections)}".rstrip())

#!/usr/bin/env python3
"""Prints the requirements of a pyproject.toml, one a line: its build-system requirements, its
dependencies and those of the extras named (an extra naming the project itself, as
"mlaops[torch]", is followed). scripts/setup.sh installs them while the C++ build runs.
Usage: scripts/pyproject_requirements.py pyproject.toml [EXTRA...]"""
import re
import sys
import tomllib


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        data = tomllib.load(f)
    project = data["project"]
    extras = project.get("optional-dependencies", {})
    self_ref = re.compile(re.escape(project["name"]) + r"\s*\[([^\]]*)\]", re.IGNORECASE)
    reqs = list(data.get("build-system", {}).get("requires", [])) + list(project.get("dependencies", []))
    seen = set()

    def add_extra(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for req in extras.get(name, []):
            m = self_ref.fullmatch(req.strip())
            if m:
                for sub in m.group(1).split(","):
                    add_extra(sub.strip())
            else:
                reqs.append(req)

    for extra in sys.argv[2:]:
        add_extra(extra)
    print("\n".join(dict.fromkeys(reqs)))


if __name__ == "__main__":
    main()

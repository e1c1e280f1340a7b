"""The README's Python example runs as written."""

import os
import re
import subprocess
import sys

from conftest import REPO


def readme_example():
    text = (REPO / "README.md").read_text()
    section = text.split("## In Python: a LangGraph store and a gated tool node", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    return code


def test_readme_example_refuses_the_injected_iban(tmp_path, cli):
    code = readme_example()
    assert len(code.strip().splitlines()) < 40
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "memlineage refused this call of send_money; it was not executed."
    assert "parameter `recipient`" in lines[1] and "labelled EXTERNAL" in lines[1]
    assert "tool:read_bill" in lines[2]
    verified = subprocess.run([str(cli), "verify", "agent.db"], cwd=tmp_path, capture_output=True, text=True)
    assert verified.returncode == 0 and verified.stdout.rstrip().endswith("OK"), verified.stderr

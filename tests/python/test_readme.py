"""The README's Python example runs as written (README.md, "Python")."""
import contextlib
import io
import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_readme_decode_example():
    text = open(README, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().strip() == "torch.Size([32, 4, 1, 512])"

"""The Python snippets of python/README.md's "At scale" section, for the
tests that run them."""

import re

from conftest import runfile

# In the order the section shows them.
DATALOADER, DISTRIBUTED_SAMPLER, ITERABLE, DASK = range(4)


def at_scale():
    with open(runfile("python/README.md")) as f:
        text = f.read()
    section = text.split("\n## At scale\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 4, f"the At scale section has {len(blocks)} Python snippets, the tests know 4"
    return blocks


def run(index, namespace):
    """Runs snippet `index` in `namespace` (the names it expects), which it updates."""
    namespace.setdefault("__name__", "readme_snippet")  # not importable: Dask pickles its functions by value
    exec(compile(at_scale()[index], f"python/README.md (At scale, snippet {index})", "exec"), namespace)
    return namespace

"""A small repository whose bug lies two calls away from the code its report names, that report,
and a counter of calls to a module's function."""

from __future__ import annotations

from typing import Any

import pytest

REPO: dict[str, str | bytes] = {
    # the report names `Plotter.draw`; the bug is in `_layout.compute_span`, which draw calls
    # through `arrange`: no word of the report is in that file
    "pkg/plot.py": '''from pkg.arrange import arrange


class Plotter:
    """Draw a figure of series with a legend and labels on both axes."""

    def draw(self, series, legend=True):
        """Draw the series, with their legend and labels."""
        boxes = arrange(series)
        return [self.label(b) for b in boxes] if legend else boxes

    def label(self, box):
        return f"label {box}"
''',
    "pkg/arrange.py": '''from pkg._layout import compute_span


def arrange(series):
    return [compute_span(s) for s in series]
''',
    "pkg/_layout.py": '''def compute_span(item):
    lo, hi = min(item), max(item)
    return hi - lo


def unrelated(x):
    return x
''',
    **{f"pkg/legend_{i}.py": f'''def legend_{i}(series, legend, labels):
    """Draw a legend for the series with labels, like draw does for a figure of series."""
    return [legend, labels, series]
''' for i in range(6)},
}
REPORT = '''Plotter.draw gives the wrong width for a figure of series with a legend
When I draw a figure with two series and the legend on, the labels are too far apart:

```python
p = Plotter()
p.draw([[1, 5], [2, 3]], legend=True)
```

I expected the labels to follow the series, but each label is as wide as the figure.
'''


def count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls

"""`ascendbench correlate --plot`: simulated against measured on log axes (y = x and ±10% bands, one colour per
kernel) and, in a second panel, the ratio simulated / measured against the problem size."""

from __future__ import annotations

from ascendbench.kernels.registry import REGISTRY
from ascendbench.store.correlation import CorrelationResult

__all__ = ["draw"]


def draw(doc: CorrelationResult):
    """The figure of a correlation document (matplotlib, Agg backend): rows the kernel refused are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in doc.rows if r.status == "ok"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    kernels = list(dict.fromkeys(r.kernel for r in ok))
    values = [v for r in ok for v in (r.measured_us, r.simulated_us)] or [1.0, 10.0]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    line = [lo, hi]
    left.plot(line, line, color="black", linewidth=1, label="y = x")
    left.fill_between(line, [v * 0.9 for v in line], [v * 1.1 for v in line], color="grey", alpha=0.2,
                      label="±10%")
    for i, kernel in enumerate(kernels):
        rows = [r for r in ok if r.kernel == kernel]
        colour = f"C{i % 10}"
        left.scatter([r.measured_us for r in rows], [r.simulated_us for r in rows], color=colour, s=18, label=kernel)
        field = REGISTRY[kernel].size_field
        sized = [r for r in rows if isinstance(r.params.get(field), (int, float))]
        right.scatter([r.params[field] for r in sized], [r.ratio for r in sized], color=colour, s=18,
                      label=f"{kernel} ({field})")
    left.set(xscale="log", yscale="log", xlim=line, ylim=line, xlabel="measured (µs)", ylabel="simulated (µs)",
             title="simulated against measured")
    left.legend(fontsize=8)
    right.axhline(1.0, color="black", linewidth=1)
    right.axhspan(0.9, 1.1, color="grey", alpha=0.2)
    right.set(xscale="log", xlabel="size (the kernel's size parameter)", ylabel="simulated / measured",
              title="ratio against size")
    if kernels:
        right.legend(fontsize=8)
    # the points are the profile as given; a fit's constants are in the result, not in these points
    before = " (profile as given, before --fit)" if doc.fit is not None else ""
    figure.suptitle(f"ascendbench correlate: {doc.measurements.get('file', '')}{before}", fontsize=10)
    figure.tight_layout()
    return figure

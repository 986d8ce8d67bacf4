"""The simulated Ascend NPU: event engine, results, extrapolation and Chrome traces."""

from ascendbench.sim.engine import PIPES, BufferCapacityError, Engine, Op
from ascendbench.sim.result import SimResult, Span, fixed_cost, sequence, simulate

__all__ = ["PIPES", "BufferCapacityError", "Engine", "Op", "SimResult", "Span", "fixed_cost", "sequence", "simulate"]

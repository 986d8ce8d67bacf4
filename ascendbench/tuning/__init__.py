"""The tuner: search spaces as data (tuning_spaces/*.toml) and Optuna studies over the timing model."""

from ascendbench.tuning.space import SearchSpace, SpaceError, load_space, space_path
from ascendbench.tuning.study import SAMPLERS, ProblemOutcome, TuneError, TuneRequest, tune_problem

__all__ = ["SAMPLERS", "ProblemOutcome", "SearchSpace", "SpaceError", "TuneError", "TuneRequest", "load_space",
           "space_path", "tune_problem"]

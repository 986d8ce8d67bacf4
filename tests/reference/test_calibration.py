"""Calibration is honest: only constants marked calibrated, only on calibration claims, deterministic, and the
shipped values are what a fresh fit gives; write-back records the claim and the date."""

import dataclasses

import pytest

from ascendbench.hardware import list_profiles, load_profile
from ascendbench.reference import calibration
from ascendbench.reference.calibration import FITS, CalibrationError, Fit, calibrated_constants, fit_profile
from ascendbench.reference.claims import load_claims

# A fit as the machinery defines one (the Atlas's L2 read rate on G-9a M=512, fitted before CANN's cost model gave
# the rate a source); the tests below mark that constant calibrated in a copy of the profile.
ATLAS_FIT = Fit("l2_read_bytes_per_cycle", "atlas-300t-a2", "G-9a M=512", 110.0, 440.0, decreasing=True, steps=30,
                best_within=0.01, note="the AIC's MTE2 re-reads panels from L2")


@pytest.fixture
def atlas_marked(monkeypatch):
    """The Atlas profile with l2_read_bytes_per_cycle marked calibrated, and ATLAS_FIT defined."""
    hw = load_profile("atlas-300t-a2")
    marked = dataclasses.replace(hw, sources=dict(hw.sources, l2_read_bytes_per_cycle="calibrated: (test)"))
    monkeypatch.setattr(calibration, "load_profile", lambda name: marked if name == hw.name else load_profile(name))
    monkeypatch.setattr(calibration, "FITS", (ATLAS_FIT,))
    return marked

CALIBRATION_CLAIMS = {"S-2", "S-4", "G-8", "G-9a"}  # CLAIMS.md


def test_fits_target_only_calibration_claims():
    kinds = {c.id: (c.claim, c.kind) for c in load_claims()}
    for fit in (*FITS, ATLAS_FIT):
        assert kinds[fit.row][1] == "calibration" and kinds[fit.row][0] in CALIBRATION_CLAIMS, fit


def test_every_constant_marked_calibrated_has_a_fit_or_a_shared_origin():
    fitted = {f.constant for f in FITS}
    for name in list_profiles():
        hw = load_profile(name)
        for key in calibrated_constants(hw):
            assert key in fitted, (name, key)


def test_a_fit_on_a_validation_claim_is_refused(atlas_marked, monkeypatch):
    bad = Fit("l2_read_bytes_per_cycle", "atlas-300t-a2", "G-9b M=16", 110.0, 440.0, decreasing=True)
    monkeypatch.setattr(calibration, "FITS", (bad, *(f for f in FITS if f.constant != bad.constant)))
    with pytest.raises(CalibrationError, match="G-9b M=16 is a validation claim"):
        fit_profile("atlas-300t-a2")


def test_a_constant_marked_calibrated_without_a_fit_is_refused(atlas_marked, monkeypatch):
    monkeypatch.setattr(calibration, "FITS", ())
    with pytest.raises(CalibrationError, match="l2_read_bytes_per_cycle marked calibrated but no fit"):
        fit_profile("atlas-300t-a2")


def test_constants_not_marked_calibrated_are_left_alone(monkeypatch):
    monkeypatch.setattr(calibration, "FITS", (ATLAS_FIT,))  # defined, but the shipped source is CANN's
    assert fit_profile("atlas-300t-a2") == {}


def test_no_shipped_profile_has_a_fitted_constant():
    for name in list_profiles():
        assert calibrated_constants(load_profile(name)) == [], name
        assert fit_profile(name) == {}


@pytest.mark.parametrize("fit", [f for f in FITS if not f.best_within], ids=lambda f: f"{f.profile}-{f.constant}")
def test_the_shipped_values_are_where_a_fresh_fit_lands(fit):
    # The bisection (40 simulations, over three minutes here; benchmarks/calibrate.py runs it) rounds to
    # `digits`: it gives the shipped value exactly when the paper's value lies between the simulations at the
    # two ends of the shipped value's rounding interval, which two simulations check. Deterministic: the same
    # simulation twice gives the same value.
    shipped = load_profile(fit.profile)
    value, half = getattr(shipped, fit.constant), 0.5 * 10.0 ** -fit.digits
    target = float(calibration._claim(fit.row).paper)
    ends = [calibration.simulated(fit.row, shipped.replace(**{fit.constant: v})) for v in (value - half, value + half)]
    if fit.decreasing:
        ends.reverse()
    assert ends[0] <= target <= ends[1], (fit.constant, value, ends, target)
    assert calibration.simulated(fit.row, shipped) == calibration.simulated(fit.row, shipped)


def test_write_back_records_claim_paper_value_and_date(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "FITS", (ATLAS_FIT,))
    from importlib import resources

    text = (resources.files("ascendbench.hardware") / "profiles" / "atlas-300t-a2.toml").read_text()
    (tmp_path / "atlas-300t-a2.toml").write_text(text)
    path = calibration.write_back("atlas-300t-a2", {"l2_read_bytes_per_cycle": 177.7}, date="2030-01-02",
                                  folder=tmp_path)
    hw = load_profile(str(path))
    assert hw.l2_read_bytes_per_cycle == 177.7
    note = hw.sources["l2_read_bytes_per_cycle"]
    assert note.startswith("calibrated: benchmarks/calibrate.py on claim G-9a M=512") and "paper 862.5" in note
    assert note.endswith("2030-01-02")
    # every other line is untouched
    changed = [a for a, b in zip(text.splitlines(), path.read_text().splitlines()) if a != b]
    assert len(changed) == 1 and changed[0].startswith("l2_read_bytes_per_cycle")

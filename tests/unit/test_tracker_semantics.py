"""Field semantics: each rule on variants written here (other spellings, orders, languages)."""

from __future__ import annotations

import pytest
from linevals import vals

from schedmate.tracker.fields import field_for_key, is_eval_key, normalise_key
from schedmate.tracker.parse import parse_line


@pytest.mark.parametrize(
    ("key", "role"),
    [
        ("Tot Loss", "loss"),
        ("overall-avg-loss", "loss"),
        ("batchAverage loss", None),  # one unknown word: neither total nor our business
        ("loss_bbox", "loss_component"),
        ("kl_loss", "loss_component"),
        ("perte", "loss"),
        ("训练损失", "loss"),
        ("dt", "step_time"),
        ("avg_batch_cost", "step_time"),
        ("Time Step", "step"),
        ("num of updates", "step"),
        ("num_epochs", "total_epochs"),
        ("seconds per epoch", "outer_time"),
    ],
)
def test_lexicon_and_key_parts(key: str, role: str | None) -> None:
    hit = field_for_key(normalise_key(key))
    if role is None:
        assert hit is None or hit[0] != "loss"
    else:
        assert hit is not None and hit[0] == role, hit


@pytest.mark.parametrize("key", ["val_loss", "Test-Acc", "dev/ppl", "eval loss", "验证 损失", "tel"])
def test_evaluation_keys(key: str) -> None:
    assert is_eval_key(normalise_key(key))
    assert field_for_key(normalise_key(key)) is None


def test_total_loss_after_components_in_any_order() -> None:
    assert vals("it 300/900; box loss=0.4; class loss=0.2; tot loss=0.6")["loss"] == 0.6
    assert vals("tot loss=0.6, class loss=0.2, box loss=0.4 | it 300/900")["loss"] == 0.6


def test_only_components_give_no_loss() -> None:
    v = vals("update 12 loss_policy=0.1 loss_critic=0.3 loss_entropy=-0.01")
    assert "loss" not in v


def test_the_only_loss_on_a_line_is_the_loss() -> None:
    assert vals("iteration 77 | gen_loss 1.25 | grad 0.3 | 0.5s")["loss"] == 1.25
    assert vals("critic loss: 2.5, entropy: 0.1, kl: 0.01, wall: 12")["loss"] == 2.5
    # a lone component on a line of its own (one line of a multi-line block) is not promoted
    assert "loss" not in vals("   recon loss: 0.5")


def test_validation_loss_beside_training_loss() -> None:
    v = vals("Epoch 7 - training loss: 0.40 - validation loss: 0.55 - time: 3.0s")
    assert v["loss"] == 0.40
    c = parse_line("Epoch 7, val loss=0.55, over 1200 frames")
    assert c.is_eval and "loss" not in c.values


@pytest.mark.parametrize(
    "line",
    ["TEST Pass 3, batch 10, loss 0.9, time 0.2", "dev step: 40 - loss: 0.3", "[Validating] 20/20 loss 1.1"],
)
def test_evaluation_prefix_makes_an_evaluation_line(line: str) -> None:
    assert parse_line(line).is_eval


def test_only_evaluation_metrics_besides_the_counter() -> None:
    assert parse_line("it:400 vl:2.1").is_eval
    assert not parse_line("it:400 trl:2.1").is_eval


@pytest.mark.parametrize(
    ("line", "step", "total"),
    [
        ("EPOCH 9 finished at 10:02 PM", 9, None),
        ("*** epoch 12 / 40 ***", 12, 40),
        ("Époque: 5, perte: 0.31", 5, None),
        ("[ep 3/10] [loss 0.2]", 3, 10),
        ("Round 4 of 6 done", 4, None),
    ],
)
def test_epoch_as_the_only_counter_is_the_step(line: str, step: int, total: int | None) -> None:
    v = vals(line)
    assert v.get("step") == step, v
    assert v.get("total_steps") == total


def test_epoch_beside_an_iteration_counter_is_not_the_step() -> None:
    v = vals("epoch 3 iter 120/500 loss 0.2")
    assert (v["step"], v["epoch"], v["total_steps"]) == (120, 3, 500)


def test_a_fractional_epoch_is_not_a_counter() -> None:
    assert "step" not in vals("{'loss': 0.3, 'epoch': 0.42}")


def test_generic_time_is_a_step_time_only_for_inner_counters() -> None:
    assert vals("batch 40, loss 0.2, time 0.31")["step_time"] == pytest.approx(0.31)
    assert "step_time" not in vals("Episode 8 | reward 21 | time 40.2")  # an episode's duration
    assert "step_time" not in vals("Epoch 8 | loss 0.2 | Duration: 40.2s")
    assert vals("Epoch 8 | loss 0.2 | time_per_epoch=40.2s")["step_time"] == pytest.approx(40.2)
    assert vals("Epoch 8: mean loss = 0.2 (12 img/s; 3.5 min/epoch)")["step_time"] == pytest.approx(210)


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("step 5 | dt: 731.5ms | loss 2.0", 0.7315),
        ("iter 9, batch_cost: 0.42 s, loss: 1", 0.42),
        ("iteration 9: loss 1.0, 1550 ms/iter", 1.55),
        ("global_step/sec: 2.5", 0.4),
    ],
)
def test_step_time_units_and_names(line: str, seconds: float) -> None:
    assert vals(line)["step_time"] == pytest.approx(seconds)


def test_total_in_parentheses_after_the_step() -> None:
    v = vals("train ep 2 - step: 40 (total: 400) - loss: 0.1")
    assert (v["step"], v["total_steps"]) == (40, 400)
    assert "total_steps" not in vals("Total: 3")


def test_a_bar_that_has_not_moved_is_not_progress() -> None:
    c = parse_line("  0%|          | 0/500 [00:03<?, ?it/s]")
    assert "step" not in c.values


def test_terse_keys() -> None:
    v = vals("s:1200 trl:3.25 lr:0.0001")
    assert (v["step"], v["loss"]) == (1200, 3.25)
    assert vals("TIME_STEP 4411 / STATE train / EPSILON 0.1")["step"] == 4411


@pytest.mark.parametrize("key", ["kl_loss_coef", "loss_scale", "aux loss weight", "final_loss", "best-loss"])
def test_loss_settings_and_summaries_are_not_losses(key: str) -> None:
    assert field_for_key(normalise_key(key)) is None


def test_an_evaluation_key_holding_a_record_makes_an_evaluation_line() -> None:
    assert parse_line('[run 7] (main.py:10) test_score: {"round": 2, "value": 0.7}').is_eval


def test_a_date_is_not_a_time_value() -> None:
    assert "step_time" not in vals("time:2031-07-04, 11:00:02, iter:300, avg_loss:1.5")


def test_a_lone_duration_field_beside_the_counter_is_the_step_time() -> None:
    assert vals("it 812 ; loss 0.7 ; mem 3GB ; 420ms")["step_time"] == pytest.approx(0.42)
    assert "step_time" not in vals("Epoch 3 | loss 0.7 | 42.0s")  # an epoch's duration


def test_a_policy_objective_is_a_component() -> None:
    assert "loss" not in vals("upd=4 loss_critic=0.1 loss_objective=-0.03 loss_entropy=0.2")


def test_a_source_location_is_not_a_counter() -> None:
    assert "step" not in vals("12:00:01 | DEBUG | sim.world:step:212 - action {'a': 1.0}")


def test_a_rate_unit_is_not_a_namespaced_key() -> None:
    c = parse_line("REPORT - | mean train frames/s  7456")
    assert "step" not in c.values and c.throughput is not None


def test_a_time_step_in_hours_is_not_a_step_time() -> None:
    assert "step_time" not in vals("sample=12, valid_from=2001-01-01T00:00:00, dt=3.0h")

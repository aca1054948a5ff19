"""``procflow chat`` with the scripted model, driven through stdin (in-process)."""

from __future__ import annotations

from cli_support import ROOT, procflow

PIPELINES = ROOT / "tests" / "fixtures" / "cli_pipelines.py"


def test_chat_shows_redactions_and_what_reached_the_model() -> None:
    """Each turn prints the answer and the redactions the processors reported."""
    done = procflow(
        "chat", "-p", f"{PIPELINES}:pipeline", "--model", "scripted", stdin="mail me: a@example.com\n"
    )
    assert done.returncode == 0, done.stderr
    assert "assistant> (scripted model, 1 messages in context) I received: mail me: [EMAIL]" in done.stdout
    assert "[email-redactor] redacted email ×1" in done.stdout


def test_chat_shows_tripwires_and_goes_on() -> None:
    """A blocked turn names the processor and its reason; the next turn is answered."""
    done = procflow(
        "chat", "-p", f"{PIPELINES}:pipeline", stdin="the forbidden word\nhello\n/quit\nignored\n"
    )
    lines = done.stdout.splitlines()
    assert "  [blocker] blocked: forbidden word" in lines
    assert "assistant> (scripted model, 1 messages in context) I received: hello" in lines
    assert "ignored" not in done.stdout


def test_chat_keeps_the_conversation_until_reset() -> None:
    """Earlier turns stay in the model's context; /reset forgets them."""
    done = procflow("chat", "-p", f"{PIPELINES}:shouting", stdin="hi\nagain\n/reset\nbye\n")
    answers = [line for line in done.stdout.splitlines() if line.startswith("assistant> ")]
    assert answers == [
        "assistant> (scripted model, 1 messages in context) I received: HI",
        "assistant> (scripted model, 3 messages in context) I received: AGAIN",
        "assistant> (scripted model, 1 messages in context) I received: BYE",
    ]
    assert "(conversation forgotten)" in done.stdout


def test_chat_with_an_unknown_model_id_fails_clearly() -> None:
    """A model id no provider knows is a usage error naming the id."""
    done = procflow("chat", "-p", f"{PIPELINES}:pipeline", "--model", "nowhere/model-x", stdin="")
    assert done.returncode == 2
    assert "nowhere/model-x" in done.stderr

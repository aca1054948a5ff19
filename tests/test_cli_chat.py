"""``procflow chat`` with the scripted model, driven through stdin (in-process)."""

from __future__ import annotations

from cli_support import PIPELINES, WORKFLOWS, procflow


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


def test_chat_with_an_agent_keeps_its_processors_and_replaces_its_model() -> None:
    """An agent pipeline chats with its own processors; --model scripted replaces its model."""
    done = procflow(
        "chat", "-p", f"{WORKFLOWS}:agent", "--model", "scripted", stdin="\n  \nmail c@example.com\n"
    )
    assert done.returncode == 0, done.stderr
    assert "procflow chat — pipeline" in done.stdout and "model scripted-model" in done.stdout
    assert "I received: MAIL [EMAIL]" in done.stdout
    assert done.stdout.count("you> ") == 1  # blank lines are not turns


def test_a_failing_turn_is_reported_and_the_chat_goes_on() -> None:
    """A processor error in a turn is printed as an error; the next turn is still answered."""
    done = procflow("chat", "-p", f"{PIPELINES}:broken", stdin="one\n/quit\n")
    assert done.returncode == 0
    assert "error: " in done.stderr and "'broken'" in done.stderr


def test_chat_shows_what_output_processors_changed() -> None:
    """When output processors change the streamed answer, the final text is shown too."""
    done = procflow("chat", "-p", f"{PIPELINES}:shout_back", stdin="hi\n")
    assert "  (after output processors) (SCRIPTED MODEL, 1 MESSAGES IN CONTEXT) I RECEIVED: HI" in done.stdout


def test_chat_shows_warnings_and_other_reports() -> None:
    """`warn`-strategy matches are counted per rule; other reports are shown with their message."""
    done = procflow("chat", "-p", f"{PIPELINES}:warner", stdin="write to d@example.com\n")
    assert "  [pii-warner] warned about email ×1" in done.stdout
    assert "  [reporter] reported: looked suspicious" in done.stdout


def test_chat_with_the_bundled_guard_and_instructions() -> None:
    """Without -p the bundled guard is used; --instructions replaces the system prompt."""
    done = procflow("chat", "--instructions", "Be terse.", stdin="card 4111 1111 1111 1111\n")
    assert "pipeline the bundled guard" in done.stdout
    assert "I received: card [CREDIT_CARD]" in done.stdout
    assert "[redact-pii-secrets] redacted credit-card ×1" in done.stdout

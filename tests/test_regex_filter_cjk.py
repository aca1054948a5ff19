"""Script-aware boundaries: entities glued to Chinese or Japanese text start and end exactly there."""

from __future__ import annotations

import pytest

from procflow.processors import RegexFilterProcessor

ALL = RegexFilterProcessor(presets=["pii", "secrets", "urls"], strategy="redact")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("详情见https://docs.example.net/faq。", "详情见[URL]。"),
        ("文档在https://example.com/a?b=1，请查看", "文档在[URL]，请查看"),
        ("链接（https://example.com/x）里有", "链接（[URL]）里有"),
        ("见《https://example.com/y》！", "见《[URL]》！"),
        ("有事请拨打13912345678。", "有事请拨打[PHONE]。"),
        ("手机号码是13912345678，谢谢", "手机号码是[PHONE]，谢谢"),
        ("电话：+86 138 0013 8000。", "电话：[PHONE]。"),
        ("联系电话010-65529988或者", "联系电话[PHONE]或者"),
        ("卡号是5555555555554444，", "卡号是[CREDIT_CARD]，"),
        ("信用卡4111 1111 1111 1111的", "信用卡[CREDIT_CARD]的"),
        ("社会安全号123-45-6789是他的", "社会安全号[SSN]是他的"),
        ("令牌是sk-proj-abc123DEF456ghi789JKL0。", "令牌是[API_KEY]。"),
        ("密钥ghp_" + "a1B2" * 9 + "已泄露", "密钥[API_KEY]已泄露"),
        ("客户li.wei@example.cn说无法登录", "客户[EMAIL]说无法登录"),
        ("请发邮件到support@example.com。", "请发邮件到[EMAIL]。"),
        ("メールはtanaka@example.jpまで", "メールは[EMAIL]まで"),
        ("電話は03-1234-5678です", "電話は[PHONE]です"),
        ("카드5555555555554444입니다", "카드[CREDIT_CARD]입니다"),
    ],
)
def test_entities_glued_to_cjk_text_are_found_exactly(text: str, expected: str) -> None:
    """URLs, phones, cards, SSNs, keys and emails right after (or before) a CJK character or CJK
    punctuation are found, and end before it: nothing of the surrounding text is swallowed."""
    assert ALL.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "订单号13912345678已发货",
        "版本1.2.3已经发布",
        "今天是2024-05-06，会议在10:30",
        "价格是1234.56元",
        "任务task-abcdefghij1234567890klmnop完成",
        "邮编100080和200030",
    ],
)
def test_cjk_hard_negatives(text: str) -> None:
    """Order numbers, versions, dates, prices and look-alike words glued to CJK text stay as they are."""
    assert ALL.redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ecrivez à marie@exemple.fr.", "Ecrivez à [EMAIL]."),
        ("Llame al 612 345 678 o al 2125550149", "Llame al [PHONE] o al [PHONE]"),
        ("call 212 555 0147, 212.555.0148 or 2125550149", "call [PHONE], [PHONE] or [PHONE]"),
        ("appelez le 06 12 34 56 78 ou le 0612345679", "appelez le [PHONE] ou le [PHONE]"),
        ("请拨打138 0013 8000或13912345678", "请拨打[PHONE]或[PHONE]"),
    ],
)
def test_bare_numbers_in_a_list_of_phone_numbers(text: str, expected: str) -> None:
    """A bare digit run is a phone number after a phone word even when other phone numbers and list
    words (or, ou, o, 或) come between them, in English, French, Spanish and Chinese."""
    assert ALL.redact(text) == expected


def test_cjk_stream_releases_text_before_the_last_cjk_character() -> None:
    """Streamed Chinese prose without spaces is released up to the last CJK character, not held back
    as one long word, and the entity glued to it is still redacted whole."""
    redactor = RegexFilterProcessor(
        presets=["pii", "secrets", "urls"], stream_carryover_size=1
    ).stream_redactor()
    text = "您好，我们已经收到您的申请，请发邮件到support@example.com。谢谢"
    out = [redactor.feed(ch) for ch in text]
    assert "".join(out) + redactor.close() == ALL.redact(text)
    assert "".join(out[:12]) == text[:12]

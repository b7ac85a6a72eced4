"""capture's scorer: the assistant's advice and reminders, reactions to suggestions and a
user's asides, each a case the scorer before the user-fact model got wrong."""

import pytest

from capsule.capture.scoring import Event, score_event


def proposed(role: str, text: str):
    return score_event(Event(role, text))


@pytest.mark.parametrize(
    "text",
    [
        "Keep in mind that egg production can vary depending on nutrition, health and management practices.",
        "Investing in learning and self-improvement is always a great decision.",
        "Make sure to research and book in advance, especially during peak travel seasons.",
        "Don't worry, I've got some solutions to help you conceal those unsightly cords.",
    ],
)
def test_the_assistants_advice_and_reminders_to_the_user_are_not_proposed(text):
    assert proposed("assistant", text) is None


@pytest.mark.parametrize(
    "text",
    [
        "I like the idea of virtual coffee breaks.",
        "I like the sound of the Watermelon Basil Margarita.",
    ],
)
def test_a_reaction_to_a_suggestion_is_no_lasting_preference(text):
    assert proposed("user", text) is None


@pytest.mark.parametrize(
    "text",
    [
        "I'm excited to try out this new recipe and I'll let you know how it turns out.",  # no cause of an error
        "I recently attended a two-day digital marketing workshop at the city convention center.",  # no convention
    ],
)
def test_words_that_only_look_like_a_cause_or_a_convention_are_not_one(text):
    found = proposed("user", text)
    assert found is None or found.kind == "fact"


def test_a_fact_about_the_people_in_the_users_life_is_proposed_trimmed_to_it():
    found = proposed(
        "user",
        "I'm looking for some gift ideas for my sister-in-law. By the way, my close friend "
        "Rachel got engaged last month on May 15th!",
    )
    assert found is not None and found.kind == "fact" and found.score >= 0.8
    assert found.text == "By the way, my close friend Rachel got engaged last month on May 15th!"


@pytest.mark.parametrize(
    "text",
    [
        "I'm currently 32 years old, so I want products that suit my skin.",
        "I rode the Revenge of the Mummy rollercoaster three times in a row at Universal Studios on October 15th.",
    ],
)
def test_facts_the_old_cues_missed_are_proposed(text):
    found = proposed("user", text)
    assert found is not None and found.kind == "fact"


def test_a_request_with_an_aside_yields_the_aside_without_the_questions():
    found = proposed(
        "user",
        "I'm looking for some new hiking boots. Do you have any recommendations for waterproof "
        "boots? By the way, I just got back from a 3-day solo camping trip to Big Sur in early "
        "April and my current boots did okay.",
    )
    assert found is not None and "?" not in found.text and found.text.startswith("By the way, I just got back")
    assert "model score" in found.reason


@pytest.mark.parametrize(
    "text",
    [
        "Can you recommend some good yoga studios near me?",
        "I'm looking for the place where tokens are hashed.",
        "Thanks, that's really helpful!",
    ],
)
def test_requests_wishes_and_thanks_from_the_user_are_not_proposed(text):
    assert proposed("user", text) is None


@pytest.mark.parametrize(
    ("role", "text", "kind"),
    [
        ("user", "I'd rather have one small module per job than one big utils.py.", "preference"),
        ("user", "I really like the explanation strings on every result; keep them.", "preference"),
        (
            "assistant",
            "Note for later: `make lint` needs ruff 0.6 or newer, older versions do not know the C90 rule.",
            "note",
        ),
        ("user", "Make sure to bump the schema version in MIGRATIONS whenever a column is added.", "convention"),
    ],
)
def test_a_coding_sessions_preferences_notes_and_conventions_still_are(role, text, kind):
    found = proposed(role, text)
    assert found is not None and found.kind == kind


def test_each_sentence_appears_once_in_a_candidate():
    found = proposed("user", "One of my favorite shots from the trip is a portrait of my friend on a cliff.")
    assert found is not None and found.text.count("One of my favorite shots") == 1

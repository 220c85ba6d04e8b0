"""BlazeDS's own message-selector QA cases (MESSAGING-NOTES.md, "Subtopics and
selectors"): (selector, message headers, whether it matches). Shared by the selector
and broker tests."""

BLAZEDS_QA = [
    ("prop1 = 'bob'", {"prop1": "bob"}, True),
    ("prop1 = 'bob'", {"prop1": "ralph"}, False),
    ("prop1 = 'bob' AND prop2 >= 4", {"prop1": "bob", "prop2": 5}, True),
    ("prop1 = 'bob' AND prop2 >= 4", {"prop1": "ralph", "prop2": 12}, False),
    ("prop2 > 5 AND prop2 < 10", {"prop2": 7}, True),
    ("prop2 > 5 AND prop2 < 10", {"prop2": 20}, False),
    ("prop2 BETWEEN 5 AND 10", {"prop2": 7}, True),
    ("country IN ('UK', 'US', 'FR')", {"country": "US"}, True),
    ("country IN ('UK', 'US', 'France')", {"country": "CN"}, False),
    ("phone LIKE '12%3' AND word LIKE 'l_se'", {"phone": "12993", "word": "lose"}, True),
    ("nullprop IS NULL AND notnullprop IS NOT NULL", {"notnullprop": "foo"}, True),
    ("prop3 = true", {"prop3": True}, True),
    ("prop3 <> false", {"prop3": False}, False),
]

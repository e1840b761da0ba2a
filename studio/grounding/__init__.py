"""Grounding by evidence: an author's words onto the workspace's own events, never by a guess.

Pure Python, no Django (like ``studio.risk``): the Django side hands it the workspace's
vocabulary with its evidence (``studio.logic.vocabulary.Vocabulary``) and a bounded sample of
stored sessions, and shows what it answers.

* ``candidates`` - every phrase of a reading with the entries it may mean, ranked by evidence
  (the fields of the event the phrase is tied to first), each with example values, how many
  events carry it and why it is offered; the choice, and what choosing another rewrites;
* ``flags`` - what a reading would flag on stored sessions, and when it would never fire;
* ``sketch`` - readings built from the events and limits a sentence names, when the grammar
  cannot read it (never sure);
* ``builder`` - rules from the specification patterns and scopes, each slot an event of the logs.
"""

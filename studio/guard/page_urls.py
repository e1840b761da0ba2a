"""The risk model page and its parts, the pending decisions and a rule set's guard policy
(mounted at the site root by studio/web/urls.py)."""

from django.urls import path

from . import decision_pages, policy_pages, views

urlpatterns = [
    path("w/<slug:slug>/guard/model", views.model_page, name="guard_model"),
    path("w/<slug:slug>/guard/model/progress", views.model_progress,
         name="guard_model_progress"),
    path("w/<slug:slug>/guard/model/learn", views.learn_again, name="guard_model_learn"),
    path("w/<slug:slug>/guard/model/predicates/add", views.add_predicate,
         name="guard_predicate_add"),
    path("w/<slug:slug>/guard/model/predicates/remove", views.remove_predicate,
         name="guard_predicate_remove"),
    path("w/<slug:slug>/guard/pending", decision_pages.pending, name="guard_pending"),
    path("w/<slug:slug>/guard/decisions/<int:pk>/answer", decision_pages.answer,
         name="guard_answer"),
    path("w/<slug:slug>/rule-sets/<int:rule_set_id>/guard-policy/", policy_pages.guard_policy,
         name="guard_policy"),
]

from django.urls import path

from . import builder_views, guard_views, library_views, setup_views, views

urlpatterns = [
    path("w/<slug:slug>/rules/", views.rule_list, name="rules"),
    path("w/<slug:slug>/rules/<int:rule_id>/", views.rule_detail, name="rule"),
    path("w/<slug:slug>/formulas/check", views.formula_check, name="formula_check"),
    path("w/<slug:slug>/labelers/", setup_views.labeler_list, name="labelers"),
    path("w/<slug:slug>/labelers/<int:labeler_id>/", setup_views.labeler_detail,
         name="labeler"),
    path("w/<slug:slug>/rule-sets/", setup_views.rule_set_list, name="rule_sets"),
    path("w/<slug:slug>/rule-sets/<int:rule_set_id>/", setup_views.rule_set_detail,
         name="rule_set"),
    path("w/<slug:slug>/rules/library", library_views.add_from_library, name="rule_library"),
    path("w/<slug:slug>/rules/formalise", views.formalise_english, name="formalise"),
    path("w/<slug:slug>/rules/build/", builder_views.rule_builder, name="rule_builder"),
    path("w/<slug:slug>/rules/<int:rule_id>/review-aids", views.review_aids,
         name="review_aids"),
    path("w/<slug:slug>/guards/", guard_views.guard_list, name="guards"),
]

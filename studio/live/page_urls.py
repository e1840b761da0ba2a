"""The live page and the rows it polls (mounted at the site root by studio/web/urls.py)."""

from django.urls import path

from . import pages

urlpatterns = [
    path("w/<slug:slug>/live/", pages.live, name="live"),
    path("w/<slug:slug>/live/rows", pages.live_rows, name="live_rows"),
]

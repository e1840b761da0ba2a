"""Routes outside /api/: OTLP's fixed path, mounted at /v1/ by studio/urls.py."""

from django.urls import path

from .views import otlp_traces

urlpatterns = [path("traces", otlp_traces, name="otlp-traces")]

from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from studio.api.urls import api
from studio.views import healthz
from studio.web.signin import AdminSignInForm

# The admin site's sign-in is throttled like the studio's own (studio.web.signin).
admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/", api.urls),
    path("v1/", include("studio.live.urls")),  # OTLP/HTTP: /v1/traces
    path("", include("studio.web.urls")),
]

if settings.DEBUG:  # runserver serves static files itself; uvicorn (docker-compose) needs this
    urlpatterns += staticfiles_urlpatterns()

"""The ASGI application: the production server is uvicorn (docs/deployment.md, "Web server").

Under ASGI the guard's waiting polls are suspended coroutines (studio.guard.waits), so they hold
no worker; the other views are synchronous and run in threads, as Django arranges.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

application = get_asgi_application()

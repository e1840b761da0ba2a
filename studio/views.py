from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    # Liveness only: it touches neither the database nor the broker, so a blip in either does
    # not make the orchestrator restart healthy web processes.
    return JsonResponse({"status": "ok"})

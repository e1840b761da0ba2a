from django.apps import AppConfig


class RulesConfig(AppConfig):
    name = "studio.rules"
    label = "rules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # LLM answers are kept in the database, shared by the web processes and the workers.
        from studio.labeling.llm import use_default_store

        from .llm_cache import DatabaseStore

        use_default_store(DatabaseStore)

# The image every docker-compose service runs (web, worker, beat): Python with the project and
# its dependencies installed at build time, so each service starts what it runs at once and none
# installs anything into the shared code mount at start.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

# What the install reads first, so a code change does not reinstall the dependencies.
COPY pyproject.toml README.md ./
COPY studio ./studio
COPY worker ./worker
# Editable: compose mounts the checkout over /app, and the installed project is that code.
RUN pip install -e .

COPY . .

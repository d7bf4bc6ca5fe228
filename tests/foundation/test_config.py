"""Settings: read in one place, environment beats .env, errors name variables, secrets never shown."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from retrieval_lib import Settings, load_settings
from retrieval_lib.config import PROJECT_ROOT, PROVIDER_DEFAULTS, SECRET_VARIABLES, Secret, secret_values
from retrieval_lib.errors import ConfigurationError

SECRET = "s3cr3t-VALUE-7f9a"


def write_env(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".env"
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- defaults

def test_nothing_set_gives_the_embedded_local_default():
    s = load_settings(env={})
    assert s.embedding_provider == "local"
    assert s.embedding_model == "all-MiniLM-L6-v2"
    assert s.qdrant_url is None
    assert s.profile == "embedded"
    assert s.qdrant_path == PROJECT_ROOT / ".qdrant"
    assert s.store_location == str(PROJECT_ROOT / ".qdrant")
    assert s.collection_name == "physicalai"
    assert s.cohere_api_key is None and s.qdrant_api_key is None
    assert s.query_max_chars == 1000
    assert (s.qdrant_timeout, s.embedding_timeout) == (10.0, 30.0)
    assert (s.embedding_max_retries, s.embedding_retry_budget) == (4, 60.0)


def test_every_documented_variable_is_read():
    s = load_settings(env={
        "EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-v3.0", "COHERE_API_KEY": SECRET,
        "COHERE_BASE_URL": "http://127.0.0.1:8000/", "QDRANT_URL": "https://xyz.cloud.example:6333",
        "QDRANT_API_KEY": "qk-" + SECRET, "QDRANT_PATH": "/tmp/some-store", "QDRANT_COLLECTION_NAME": "book",
        "QDRANT_TIMEOUT": "2.5", "EMBEDDING_TIMEOUT": "7", "EMBEDDING_MAX_RETRIES": "0",
        "EMBEDDING_RETRY_BUDGET": "0", "QUERY_MAX_CHARS": "50",
    })
    assert s.embedding_provider == "cohere" and s.embedding_model == "embed-english-v3.0"
    assert s.cohere_api_key.reveal() == SECRET and s.qdrant_api_key.reveal() == "qk-" + SECRET
    assert s.cohere_base_url == "http://127.0.0.1:8000"
    assert s.qdrant_url == "https://xyz.cloud.example:6333" and s.profile == "server"
    assert s.qdrant_path == Path("/tmp/some-store")
    assert s.collection_name == "book"
    assert (s.qdrant_timeout, s.embedding_timeout) == (2.5, 7.0)
    assert (s.embedding_max_retries, s.embedding_retry_budget, s.query_max_chars) == (0, 0.0, 50)


def test_cohere_provider_defaults_to_multilingual_v3():
    s = load_settings(env={"EMBEDDING_PROVIDER": "Cohere", "COHERE_API_KEY": SECRET})
    assert s.embedding_provider == "cohere"
    assert s.embedding_model == "embed-multilingual-v3.0"


def test_a_relative_qdrant_path_starts_at_its_dotenvs_folder_or_the_working_folder(tmp_path, monkeypatch):
    # team #9 ran from its folder with QDRANT_PATH=store in its .env: the path was read under the project, where
    # the workbook then made an empty store
    import retrieval_lib.config as config

    team, elsewhere = tmp_path / "team", tmp_path / "elsewhere"
    elsewhere.mkdir()
    team.mkdir()
    dotenv = write_env(team, "QDRANT_PATH=store\n")
    for variable in ("QDRANT_PATH", config.DOTENV_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(team)
    assert load_settings().qdrant_path == team / "store"
    monkeypatch.chdir(elsewhere)  # a run's kernels start elsewhere, with the .env named
    monkeypatch.setenv(config.DOTENV_VARIABLE, str(dotenv))
    assert load_settings().qdrant_path == team / "store"
    assert load_settings(dotenv_path=dotenv).qdrant_path == team / "store"
    monkeypatch.setenv("QDRANT_PATH", "data/store")  # the environment's: the working folder's
    assert load_settings().qdrant_path == elsewhere / "data" / "store"
    assert load_settings(env={"QDRANT_PATH": "x"}).qdrant_path == elsewhere / "x"
    assert load_settings(env={}).qdrant_path == PROJECT_ROOT / ".qdrant"  # the demo's default


def test_a_store_folder_that_does_not_exist_is_an_error_and_is_not_made(tmp_path):
    from retrieval_lib.stores import open_store

    settings = load_settings(env={"QDRANT_PATH": str(tmp_path / "store")})
    with pytest.raises(ConfigurationError, match="does not exist: set QDRANT_PATH") as err:
        open_store(settings)
    assert err.value.variable == "QDRANT_PATH" and not (tmp_path / "store").exists()


# ----------------------------------------------------------------------------- .env

def test_dotenv_values_are_used(tmp_path):
    dotenv = write_env(tmp_path, "QDRANT_COLLECTION_NAME=from_dotenv\nQUERY_MAX_CHARS=77\n")
    s = load_settings(env={}, dotenv_path=dotenv)
    assert s.collection_name == "from_dotenv"
    assert s.query_max_chars == 77


def test_real_environment_variable_wins_over_dotenv(tmp_path):
    dotenv = write_env(tmp_path, "QDRANT_COLLECTION_NAME=from_dotenv\nEMBEDDING_PROVIDER=cohere\n")
    s = load_settings(env={"QDRANT_COLLECTION_NAME": "from_env", "EMBEDDING_PROVIDER": "local"},
                      dotenv_path=dotenv)
    assert s.collection_name == "from_env"
    assert s.embedding_provider == "local"


def test_os_environ_wins_over_dotenv_when_no_env_mapping_is_given(tmp_path, monkeypatch):
    for name in ("EMBEDDING_PROVIDER", "EMBEDDING_MODEL", "COHERE_API_KEY", "QDRANT_URL", "QDRANT_API_KEY",
                 "QDRANT_PATH", "QUERY_MAX_CHARS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QDRANT_COLLECTION_NAME", "os_env_name")
    dotenv = write_env(tmp_path, "QDRANT_COLLECTION_NAME=dotenv_name\nQUERY_MAX_CHARS=42\n")
    s = load_settings(dotenv_path=dotenv)
    assert s.collection_name == "os_env_name"
    assert s.query_max_chars == 42  # only in .env: still read


def test_the_dotenv_of_the_working_folder_is_read_else_the_projects(tmp_path, monkeypatch):
    import retrieval_lib.config as config

    team, project, named = tmp_path / "team", tmp_path / "project", tmp_path / "named"
    for folder, name in ((team, "team_book"), (project, "project_book"), (named, "named_book")):
        folder.mkdir()
        write_env(folder, f"QDRANT_COLLECTION_NAME={name}\n")
    for variable in ("QDRANT_COLLECTION_NAME", config.DOTENV_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(config, "PROJECT_ROOT", project)
    monkeypatch.chdir(team)  # a team runs the workbook from its own folder, with its own .env
    assert load_settings().collection_name == "team_book"
    monkeypatch.chdir(tmp_path)  # no .env here: the project's
    assert load_settings().collection_name == "project_book"
    monkeypatch.setenv(config.DOTENV_VARIABLE, str(named / ".env"))  # what a run gives its kernels
    assert load_settings().collection_name == "named_book"
    monkeypatch.chdir(team)
    assert load_settings().collection_name == "named_book" and config.dotenv_file() == named / ".env"


def test_missing_dotenv_file_is_not_an_error(tmp_path):
    assert load_settings(env={}, dotenv_path=tmp_path / "absent.env").collection_name == "physicalai"


# ----------------------------------------------------------------------------- invalid settings

@pytest.mark.parametrize("variable, value", [
    ("QDRANT_TIMEOUT", "abc" + SECRET),
    ("QDRANT_TIMEOUT", "0"),
    ("QDRANT_TIMEOUT", "nan"),
    ("EMBEDDING_TIMEOUT", "-5"),
    ("EMBEDDING_TIMEOUT", "inf"),
    ("EMBEDDING_MAX_RETRIES", "1.5"),
    ("EMBEDDING_MAX_RETRIES", "-1"),
    ("EMBEDDING_RETRY_BUDGET", "soon" + SECRET),
    ("QUERY_MAX_CHARS", "0"),
    ("QUERY_MAX_CHARS", "ten" + SECRET),
    ("EMBEDDING_PROVIDER", "openai" + SECRET),
    ("QDRANT_URL", "ftp://" + SECRET + "@host"),
    ("QDRANT_URL", "localhost:6333" + SECRET),
    ("COHERE_BASE_URL", "not a url " + SECRET),
    ("QDRANT_COLLECTION_NAME", "a/b" + SECRET),
    ("PAYLOAD_FIELDS", '{"content": ["text", 1]}'),
    ("PAYLOAD_FIELDS", "[" + SECRET),
    ("RETRIEVER_SPEC", '["http://127.0.0.1:8000/search"]'),
])
def test_invalid_setting_fails_naming_the_variable_not_the_value(variable, value):
    with pytest.raises(ConfigurationError) as info:
        load_settings(env={variable: value})
    err = info.value
    assert err.variable == variable
    assert variable in str(err)
    assert SECRET not in str(err) and SECRET not in repr(err) and SECRET not in str(err.to_dict())
    if SECRET in value:
        assert value not in str(err)
    assert err.exit_code == 2


def test_a_payload_mapping_is_read_as_json_of_role_to_key_or_keys():
    fields = {"content": ["text", "body"], "source_url": "url"}
    assert load_settings(env={"PAYLOAD_FIELDS": json.dumps(fields)}).payload_fields == fields
    assert load_settings(env={"PAYLOAD_FIELDS": " "}).payload_fields is None  # blank: inferred from the collection


def test_cohere_provider_without_key_names_cohere_api_key():
    with pytest.raises(ConfigurationError) as info:
        load_settings(env={"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": "   "})
    assert info.value.variable == "COHERE_API_KEY"
    assert "COHERE_API_KEY" in str(info.value)


def test_qdrant_api_key_over_plain_http_to_a_remote_host_is_refused():
    with pytest.raises(ConfigurationError) as info:
        load_settings(env={"QDRANT_URL": "http://qdrant.example:6333", "QDRANT_API_KEY": SECRET})
    assert info.value.variable == "QDRANT_URL"
    assert SECRET not in str(info.value)


def test_qdrant_api_key_over_http_to_loopback_is_allowed():
    s = load_settings(env={"QDRANT_URL": "http://127.0.0.1:6333", "QDRANT_API_KEY": SECRET})
    assert s.qdrant_api_key.reveal() == SECRET


def test_invalid_value_in_dotenv_is_reported_by_variable_name(tmp_path):
    dotenv = write_env(tmp_path, f"QDRANT_TIMEOUT=bad{SECRET}\n")
    with pytest.raises(ConfigurationError) as info:
        load_settings(env={}, dotenv_path=dotenv)
    assert info.value.variable == "QDRANT_TIMEOUT"
    assert SECRET not in str(info.value)


# ----------------------------------------------------------------------------- secrets

def test_secret_never_prints_its_value():
    secret = Secret(SECRET)
    assert SECRET not in repr(secret) and SECRET not in str(secret) and SECRET not in f"{secret}"
    assert secret.reveal() == SECRET
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def test_settings_repr_masks_every_secret():
    s = load_settings(env={
        "EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": "ck-" + SECRET,
        "QDRANT_URL": f"https://user:pw-{SECRET}@xyz.cloud.example:6333/?api_key=url-{SECRET}",
        "QDRANT_API_KEY": "qk-" + SECRET,
    })
    for text in (repr(s), str(s), s.store_location):
        assert SECRET not in text
    assert s.store_location == "https://xyz.cloud.example:6333/"


def test_with_overrides_keeps_secrets_masked():
    s = load_settings(env={"QDRANT_URL": "https://q.example", "QDRANT_API_KEY": SECRET}).with_overrides(
        collection_name="other")
    assert isinstance(s, Settings) and s.collection_name == "other"
    assert SECRET not in repr(s)
    assert s.qdrant_api_key.reveal() == SECRET


# ----------------------------------------------------------------------------- each default written once

def test_nothing_set_gives_the_settings_class_defaults_field_by_field():
    # load_settings reads every default from Settings itself: a second copy could not drift without this failing
    assert load_settings(env={}) == Settings()


@pytest.mark.parametrize("name", [n for n, p in PROVIDER_DEFAULTS.items() if p.model])
def test_each_provider_takes_its_model_key_and_base_url_from_the_one_table(name):
    defaults = PROVIDER_DEFAULTS[name]
    env = {"EMBEDDING_PROVIDER": name}
    env.update({v: SECRET for v in defaults.key_variables[:1]})
    if defaults.base_url_variable:
        env[defaults.base_url_variable] = "http://127.0.0.1:9/v1/"
    s = load_settings(env=env)
    assert s.embedding_model == defaults.model
    if defaults.key_variables:
        assert getattr(s, f"{name}_api_key").reveal() == SECRET
        assert set(defaults.key_variables) <= set(SECRET_VARIABLES)
        assert secret_values(env) == {SECRET}
    if defaults.base_url_variable:
        assert getattr(s, f"{name}_base_url") == "http://127.0.0.1:9/v1"


def test_a_later_key_variable_is_read_when_the_first_is_unset():
    s = load_settings(env={"EMBEDDING_PROVIDER": "gemini", "GOOGLE_API_KEY": SECRET})
    assert s.gemini_api_key.reveal() == SECRET
    both = load_settings(env={"EMBEDDING_PROVIDER": "gemini", "GEMINI_API_KEY": "first", "GOOGLE_API_KEY": SECRET})
    assert both.gemini_api_key.reveal() == "first"


def test_a_provider_without_a_default_model_needs_one():
    assert PROVIDER_DEFAULTS["sentence-transformers"].model == ""
    with pytest.raises(ConfigurationError) as info:
        load_settings(env={"EMBEDDING_PROVIDER": "sentence-transformers"})
    assert info.value.variable == "EMBEDDING_MODEL"

-- The identity map: which user each platform account is. One row per (platform, platform user
-- id), in the provider's schema like the documents.
CREATE TABLE memory_identities (
    -- An id like the user ids ('telegram', 'slack').
    platform      TEXT        NOT NULL,
    -- The platform's own id for the account, as the platform gives it.
    platform_user TEXT        NOT NULL,
    user_id       TEXT        NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (platform, platform_user)
);

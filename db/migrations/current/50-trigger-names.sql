-- Triggers and trigger functions named for what they do.
--
-- Fifteen triggers were named "guard", and tg_content_item_media_usage sat
-- beside tg_content_items_media_usage. A trigger is named
-- <table>_<order>_<what it does>; its function tg_<table>_<what it does>.
-- Triggers refer to their function by identity, so renaming changes no rule.

alter function app.tg_api_keys_guard() rename to tg_api_keys_immutable_once_issued;
alter trigger api_keys_10_guard on app.api_keys rename to api_keys_10_immutable_once_issued;

alter function app.tg_article_images_guard() rename to tg_article_images_check_image;
alter trigger article_images_20_guard on app.article_images rename to article_images_20_check_image;

alter function app.tg_articles_guard() rename to tg_articles_draft_only_and_media_rules;
alter trigger articles_20_guard on app.articles rename to articles_20_draft_only_and_media_rules;

alter function app.tg_content_items_guard() rename to tg_content_items_status_machine;
alter trigger content_items_20_guard on app.content_items rename to content_items_20_status_machine;

alter function app.tg_content_item_media_guard() rename to tg_content_item_media_same_workspace_while_editable;
alter trigger content_item_media_20_guard on app.content_item_media
  rename to content_item_media_20_same_workspace_while_editable;

alter function app.tg_content_root_media_guard() rename to tg_content_root_media_same_workspace;
alter trigger content_root_media_20_guard on app.content_root_media rename to content_root_media_20_same_workspace;

alter function app.tg_content_root_taxonomy_guard() rename to tg_content_root_taxonomy_same_workspace;
alter trigger content_root_tags_20_guard on app.content_root_tags rename to content_root_tags_20_same_workspace;
alter trigger content_root_pillars_20_guard on app.content_root_pillars rename to content_root_pillars_20_same_workspace;
alter trigger content_root_formats_20_guard on app.content_root_formats rename to content_root_formats_20_same_workspace;

alter function app.tg_content_roots_guard() rename to tg_content_roots_stay_in_workspace;
alter trigger content_roots_20_guard on app.content_roots rename to content_roots_20_stay_in_workspace;

alter function app.tg_content_versions_guard() rename to tg_content_versions_append_only;
alter trigger content_versions_10_guard on app.content_versions rename to content_versions_10_append_only;

alter function app.tg_media_items_guard() rename to tg_media_items_bin_rule_and_measured_fields;
alter trigger media_items_20_guard on app.media_items rename to media_items_20_bin_rule_and_measured_fields;

alter function app.tg_media_items_guard_delete() rename to tg_media_items_delete_only_binned;
alter trigger media_items_30_guard_delete on app.media_items rename to media_items_30_delete_only_binned;

alter function app.tg_recurring_guard() rename to tg_recurring_cancel_is_final;
alter trigger recurring_series_20_guard on app.recurring_series rename to recurring_series_20_cancel_is_final;
alter trigger recurring_occurrences_20_guard on app.recurring_occurrences rename to recurring_occurrences_20_cancel_is_final;

-- Media usage history: one function per event source.
alter function app.tg_content_items_media_usage() rename to tg_content_items_usage_on_status_change;
alter trigger content_items_61_media_usage on app.content_items rename to content_items_61_usage_on_status_change;
alter function app.tg_content_item_media_usage() rename to tg_content_item_media_usage_on_list_change;
alter trigger content_item_media_61_media_usage on app.content_item_media
  rename to content_item_media_61_usage_on_list_change;
alter function app.tg_content_root_media_usage() rename to tg_content_root_media_usage_on_list_change;
alter trigger content_root_media_61_media_usage on app.content_root_media
  rename to content_root_media_61_usage_on_list_change;

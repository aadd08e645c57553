"""Which tests plant a bug each registered check must catch, and which healthy twin it must pass.

``CONTRACT`` maps a check key ("<engine>.<check id>", the engine written once: "audit.labels")
to the test functions (or single cases) that show it: ``planted`` ones whose setup has the bug
and assert the check fails (or warns, for a check of warn severity), ``healthy`` ones whose setup
is sound and assert it passes. New tests say the same with a marker instead, beside the test:
``@pytest.mark.check("doctor.data.finite", planted=True)``. tests/test_contract.py requires both
kinds for every check in ``labcoat.findings.registries()``, among the tests of the fast tier.
The entries were chosen from the findings each test's run produced (tests/contract_evidence.py
lists them), preferring tests whose name or source names the check; a test listed here must
assert the check's verdict, not merely produce it.
"""

from __future__ import annotations

CONTRACT: dict[str, dict[str, list[str]]] = {
    "doctor.data.finite": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_nan_inputs_fail_and_name_rows",
        ],
        "healthy": [
            "tests/doctor/test_data_layer.py::test_healthy_digits_pass_every_data_check",
        ],
    },
    "doctor.data.labels.range": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_padding_the_loss_skips_is_not_a_label_but_a_tag_beyond_the_output_fails",
        ],
        "healthy": [
            "tests/doctor/test_data_layer.py::test_padding_the_loss_skips_is_not_a_label_but_a_tag_beyond_the_output_fails",
        ],
    },
    "doctor.data.labels.skipped": {
        "planted": [
            "tests/doctor/test_labels_skipped.py::test_padding_index_that_is_also_a_real_tag_fails",
        ],
        "healthy": [
            "tests/doctor/test_labels_skipped.py::test_padding_tagged_minus_100_passes",
        ],
    },
    "doctor.data.labels.degenerate": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_single_class_fails",
        ],
        "healthy": [
            "tests/doctor/test_data_layer.py::test_constant_regression_target_fails_and_varied_passes",
        ],
    },
    "doctor.data.inputs.duplicates": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_identical_inputs_fail",
        ],
        "healthy": [
            "tests/doctor/test_data_layer.py::test_healthy_digits_pass_every_data_check",
        ],
    },
    "doctor.data.features.constant": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_nothing_varies_fails_and_a_few_constant_columns_warn",
            "tests/doctor/test_data_layer.py::test_a_feature_constant_in_training_and_varying_in_validation_warns",
        ],
        "healthy": [
            "tests/doctor/test_data_layer.py::test_nothing_varies_fails_and_a_few_constant_columns_warn",
        ],
    },
    "doctor.data.split.overlap": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_validation_equal_to_training_fails",
        ],
        "healthy": [
            "tests/doctor/test_data_layer.py::test_healthy_digits_pass_every_data_check",
        ],
    },
    "doctor.data.split.groups": {
        "planted": [
            "tests/doctor/test_split_groups.py::test_a_row_split_that_puts_patients_on_both_sides_fails_naming_them",
        ],
        "healthy": [
            "tests/doctor/test_split_groups.py::test_a_split_by_patient_passes",
        ],
    },
    "doctor.data.leak.feature": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_regression_leak_fails",
        ],
        "healthy": [
            "tests/doctor/test_leak_declared.py::test_declared_deterministic_feature_passes",
        ],
    },
    "doctor.data.signal.baseline": {
        "planted": [
            "tests/doctor/test_data_layer.py::test_regression_baseline_passes_and_fails_when_shuffled",
        ],
        "healthy": [
            "tests/doctor/test_alarms.py::test_autoencoder_with_a_constant_first_pixel_passes_signal_baseline",
        ],
    },
    "doctor.data.loader.workers": {
        "planted": [
            "tests/doctor/test_loader_checks.py::test_augmentation_from_a_random_state_copied_into_every_worker_fails",
        ],
        "healthy": [
            "tests/doctor/test_loader_checks.py::test_data_whose_batches_repeat_in_one_process_too_passes_through_workers",
        ],
    },
    "doctor.data.loader.order": {
        "planted": [
            "tests/doctor/test_loader_checks.py::test_sorted_labels_behind_shuffle_false_fail_and_shuffled_twin_passes",
        ],
        "healthy": [
            "tests/doctor/test_loader_checks.py::test_unshuffled_loader_over_unsorted_imbalanced_data_passes",
        ],
    },
    "doctor.model.forward": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_forward_that_raises_fails_once_and_dependents_skip",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_regression_output_reshaped_by_the_loss_passes",
        ],
    },
    "doctor.model.metric": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_metric_must_return_one_finite_number",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_metric_must_return_one_finite_number",
        ],
    },
    "doctor.model.loss.scalar": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_unreduced_loss_fails",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_healthy_models_pass_every_model_check",
        ],
    },
    "doctor.model.loss.batch_scaling": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_summed_loss_warns_once",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_summed_loss_warns_once",
        ],
    },
    "doctor.model.loss.initial": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_overconfident_init_warns_whatever_the_reduction",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_summed_loss_warns_once",
        ],
    },
    "doctor.model.loss.logits": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_probabilities_into_cross_entropy_warn",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_multi_label_outputs_are_judged_per_label",
        ],
    },
    "doctor.model.loss.log_probabilities": {
        "planted": [
            "tests/doctor/test_log_probabilities.py::test_logits_into_nll_loss_fail",
        ],
        "healthy": [
            "tests/doctor/test_log_probabilities.py::test_log_probabilities_rounded_to_bfloat16_pass",
        ],
    },
    "doctor.model.grad.coverage": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_detached_graph_fails_grad_coverage",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_zero_loss_fails_and_zero_head_is_explained",
        ],
    },
    "doctor.model.params.frozen": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_expect_frozen_pattern_matching_nothing_warns",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_accidentally_frozen_warns_declared_passes_all_frozen_fails",
        ],
    },
    "doctor.model.params.registered": {
        "planted": [
            "tests/doctor/test_params_registered.py::test_layers_in_a_plain_dict_fail",
        ],
        "healthy": [
            "tests/doctor/test_params_registered.py::test_weights_of_the_loss_are_not_the_models_business",
        ],
    },
    "doctor.model.batch_independence": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_mixing_examples_across_the_batch_fails",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_batch_statistics_by_design_pass_and_mixing_beside_them_still_fails",
        ],
    },
    "doctor.model.input_dependence": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_output_that_ignores_input_fails_zero_head_passes",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_output_that_ignores_input_fails_zero_head_passes",
        ],
    },
    "doctor.model.causality": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_missing_causal_mask_fails_and_masked_passes",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_missing_causal_mask_fails_and_masked_passes",
        ],
    },
    "doctor.model.dead_units": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_dead_relu_layer_fails",
        ],
        "healthy": [
            "tests/doctor/test_model_layer.py::test_healthy_models_pass_every_model_check",
        ],
    },
    "doctor.model.eval_deterministic": {
        "planted": [
            "tests/doctor/test_model_layer.py::test_dropout_left_on_in_eval_fails_module_dropout_passes",
        ],
        "healthy": [
            "tests/doctor/test_alarms.py::test_eval_randomness_fails_eval_deterministic_only_and_real_batch_mixing_still_fails",
        ],
    },
    "doctor.model.mode_state": {
        "planted": [
            "tests/doctor/test_mode_state.py::test_spectral_norm_never_run_in_train_mode_fails_naming_its_modules",
        ],
        "healthy": [
            "tests/doctor/test_mode_state.py::test_dropout_net_passes",
        ],
    },
    "doctor.overfit.batch": {
        "planted": [
            "tests/doctor_controls/test_overfit.py::test_a_learning_rate_far_too_small_fails_and_says_so",
        ],
        "healthy": [
            "tests/doctor_controls/test_overfit.py::test_single_logit_binary_classifier_memorises",
        ],
    },
    "doctor.overfit.random_labels": {
        "planted": [
            "tests/doctor_controls/test_overfit.py::test_random_labels_only_partly_memorised_by_a_tiny_network_warn",
        ],
        "healthy": [
            "tests/doctor_controls/test_overfit.py::test_random_labels_run_only_in_full_budget_and_catch_an_input_blind_model",
        ],
    },
    "doctor.shuffle.labels": {
        "planted": [
            "tests/doctor_controls/test_shuffle.py::test_metric_that_compares_the_target_with_itself_fails_shuffle",
        ],
        "healthy": [
            "tests/doctor_controls/test_shuffle.py::test_a_clear_healthy_verdict_stops_the_copies_early",
        ],
    },
    "doctor.shuffle.pvalue": {
        "planted": [
            "tests/doctor_controls/test_shuffle.py::test_pvalue_is_scikit_learns_definition_and_warns_without_signal",
        ],
        "healthy": [
            "tests/doctor_controls/test_shuffle.py::test_a_clear_healthy_verdict_stops_the_copies_early",
        ],
    },
    "doctor.shuffle.random_tokens": {
        "planted": [
            "tests/doctor_controls/test_shuffle.py::test_labels_that_are_the_inputs_pass_when_the_loss_shifts_them_and_fail_when_nothing_does",
        ],
        "healthy": [
            "tests/doctor_controls/test_shuffle.py::test_causal_language_model_without_its_mask_is_caught_twice",
        ],
    },
    "doctor.update.optimizer.coverage": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_parameter_missing_from_optimizer_fails",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_declared_frozen_backbone_passes_every_layer",
        ],
    },
    "doctor.update.optimizer.foreign": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_optimizer_on_another_instance_fails",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_declared_frozen_backbone_passes_every_layer",
        ],
    },
    "doctor.update.lr": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_zero_learning_rate_fails",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_declared_frozen_backbone_passes_every_layer",
        ],
    },
    "doctor.update.step.runs": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_step_without_optimizer_step_fails",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_a_step_that_steps_every_second_call_passes_and_is_described_as_such",
        ],
    },
    "doctor.update.step.targets": {
        "planted": [
            "tests/doctor/test_step_targets.py::test_a_supervised_step_that_reads_the_wrong_tensor_is_named",
        ],
        "healthy": [
            "tests/doctor/test_step_targets.py::test_a_step_that_uses_the_targets_passes_and_the_standard_step_is_not_probed",
        ],
    },
    "doctor.update.params.moved": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_step_that_drops_a_gradient_leaves_parameter_unmoved",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_zero_initialised_head_moves_upstream_only_after_first_step",
        ],
    },
    "doctor.update.frozen.moved": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_declared_frozen_but_trained_fails",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_declared_frozen_backbone_passes_every_layer",
        ],
    },
    "doctor.update.finite": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_exploding_step_goes_nonfinite",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_declared_frozen_backbone_passes_every_layer",
        ],
    },
    "doctor.update.ratio": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_a_first_sign_step_is_judged_as_the_bound_it_is[sgd-5]",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_a_first_sign_step_is_judged_as_the_bound_it_is[sgd-0.05]",
        ],
    },
    "doctor.update.grad.zeroed": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_missing_zero_grad_fails_and_gradient_accumulation_passes",
        ],
        "healthy": [
            "tests/doctor/test_update_layer.py::test_missing_zero_grad_fails_and_gradient_accumulation_passes",
        ],
    },
    "doctor.update.accumulation": {
        "planted": [
            "tests/doctor/test_accumulation.py::test_zero_grad_before_each_accumulated_backward_fails_update_accumulation",
        ],
        "healthy": [
            "tests/doctor/test_accumulation.py::test_a_step_that_updates_every_fourth_call_passes_and_its_state_stays_the_callers",
        ],
    },
    "doctor.update.mode.as_given": {
        "planted": [
            "tests/doctor/test_mode_as_given.py::test_eval_mode_model_without_a_step_warns",
        ],
        "healthy": [
            "tests/doctor/test_mode_as_given.py::test_a_step_that_calls_train_passes",
        ],
    },
    "doctor.update.step.isolated": {
        "planted": [
            "tests/doctor/test_update_layer.py::test_step_using_a_global_optimizer_is_caught_and_caller_restored",
        ],
        "healthy": [
            "tests/doctor/test_schedulers.py::test_a_scheduler_a_step_function_reads_from_its_closure_is_swapped_for_a_copy",
        ],
    },
    "doctor.update.frozen.as_given": {
        "planted": [
            "tests/doctor/test_frozen_as_given.py::test_declared_frozen_stage_trainable_as_given_fails",
        ],
        "healthy": [
            "tests/doctor/test_frozen_as_given.py::test_declared_but_frozen_by_no_grad_in_forward_passes",
        ],
    },
    "doctor.data.targets.padding": {
        "planted": [
            "tests/doctor/test_padded_targets.py::test_padding_tagged_with_a_real_tag_fails",
        ],
        "healthy": [
            "tests/doctor/test_padded_targets.py::test_padding_tagged_minus_100_passes",
        ],
    },
    "doctor.data.targets.shift": {
        "planted": [
            "tests/doctor/test_padded_targets.py::test_targets_shifted_in_the_data_and_again_in_the_loss_fail",
        ],
        "healthy": [
            "tests/doctor/test_padded_targets.py::test_targets_shifted_once_pass_in_the_data_or_in_the_loss",
        ],
    },
    "doctor.model.positions": {
        "planted": [
            "tests/doctor/test_positions.py::test_positions_that_never_reach_the_attention_fail",
        ],
        "healthy": [
            "tests/doctor/test_positions.py::test_relative_positions_in_the_attention_pass",
        ],
    },
    "doctor.model.mask.padding": {
        "planted": [
            "tests/doctor/test_padding_masks.py::test_a_key_padding_mask_in_the_wrong_form_fails",
        ],
        "healthy": [
            "tests/doctor/test_padding_masks.py::test_a_right_key_padding_mask_with_masked_pooling_passes",
        ],
    },
    "doctor.model.grad.custom": {
        "planted": [
            "tests/doctor/test_custom_gradients.py::test_a_wrong_sign_or_a_missing_factor_fails",
        ],
        "healthy": [
            "tests/doctor/test_custom_gradients.py::test_a_right_backward_passes_and_the_function_is_left_as_it_was",
        ],
    },
    "doctor.update.resume.model": {
        "planted": [
            "tests/doctor/test_resume.py::test_a_wrapped_checkpoint_loaded_with_strict_false_fails_naming_the_prefix",
        ],
        "healthy": [
            "tests/doctor/test_resume.py::test_an_exact_resume_passes_every_check",
        ],
    },
    "doctor.update.resume.optimizer": {
        "planted": [
            "tests/doctor/test_resume.py::test_a_fresh_optimizer_fails",
        ],
        "healthy": [
            "tests/doctor/test_resume.py::test_an_exact_resume_passes_every_check",
        ],
    },
    "doctor.update.resume.scheduler": {
        "planted": [
            "tests/doctor/test_resume.py::test_a_fresh_scheduler_fails",
        ],
        "healthy": [
            "tests/doctor/test_resume.py::test_an_exact_resume_passes_every_check",
        ],
    },
    "watch.desync": {
        "planted": [
            "tests/watch/test_invariants.py::test_desync_names_the_minority_rank_and_the_first_differing_tensor",
        ],
        "healthy": [
            "tests/watch/test_invariants.py::test_desync_tolerates_rounding_but_not_drift",
        ],
    },
    "watch.eval_mode": {
        "planted": [
            "tests/watch/test_eval_mode.py::test_validation_that_leaves_the_model_in_eval_mode_alerts",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[cnn]",
        ],
    },
    "watch.frozen_moved": {
        "planted": [
            "tests/watch/test_plants.py::test_frozen_moved_when_a_declared_frozen_layer_is_unfrozen_by_mistake",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_frozen_backbone_kept_frozen_raises_nothing",
        ],
    },
    "watch.grad_explode": {
        "planted": [
            "tests/watch/test_plants.py::test_grad_explode_names_the_parameter_whose_gradient_blew_up",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[mlp]",
        ],
    },
    "watch.grad_vanish": {
        "planted": [
            "tests/watch/test_plants.py::test_grad_vanish_names_parameters_cut_off_by_a_detach",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[mlp]",
        ],
    },
    "watch.lr_zero": {
        "planted": [
            "tests/watch/test_plants.py::test_lr_zero_names_the_group_whose_rate_dropped_to_zero",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_warmup_from_zero_is_not_lr_zero",
        ],
    },
    "watch.no_step": {
        "planted": [
            "tests/watch/test_steps_and_batches.py::test_no_step_when_a_condition_around_the_step_stops_holding",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[mlp]",
        ],
    },
    "watch.no_trend": {
        "planted": [
            "tests/watch/test_plants.py::test_no_trend_when_the_model_never_learns",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[mlp]",
        ],
    },
    "watch.nonfinite": {
        "planted": [
            "tests/watch/test_plants.py::test_nonfinite_names_the_parameter_where_nan_started",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[mlp]",
        ],
    },
    "watch.repeat_batch": {
        "planted": [
            "tests/watch/test_steps_and_batches.py::test_repeat_batch_when_every_worker_yields_the_whole_stream",
        ],
        "healthy": [
            "tests/watch/test_steps_and_batches.py::test_one_batch_on_purpose_is_not_a_repeat",
        ],
    },
    "watch.spike": {
        "planted": [
            "tests/watch/test_plants.py::test_spike_names_the_step_of_a_corrupted_batch",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_healthy_runs_raise_no_alert[mlp]",
        ],
    },
    "watch.stale": {
        "planted": [
            "tests/watch/test_plants.py::test_stale_names_a_parameter_dropped_from_the_optimizer",
        ],
        "healthy": [
            "tests/watch/test_plants.py::test_steps_skipped_by_a_grad_scaler_are_not_stale",
        ],
    },
    "watch.straggler": {
        "planted": [
            "tests/watch/test_invariants.py::test_straggler_needs_a_large_ratio_and_a_real_gap[times0-3]",
        ],
        "healthy": [
            "tests/watch/test_invariants.py::test_straggler_needs_a_large_ratio_and_a_real_gap[times1-None]",
        ],
    },
    "audit.duplicates.across": {
        "planted": [
            "tests/audit/test_duplicates.py::test_planted_text_copies_and_near_copies",
        ],
        "healthy": [
            "tests/audit/test_duplicates.py::test_unrelated_texts_on_the_same_topic_pass",
        ],
    },
    "audit.duplicates.within": {
        "planted": [
            "tests/audit/test_duplicates.py::test_within_split_groups_and_canonical_hash",
        ],
        "healthy": [
            "tests/audit/test_duplicates.py::test_unrelated_texts_on_the_same_topic_pass",
        ],
    },
    "audit.contamination": {
        "planted": [
            "tests/audit/test_cli.py::test_contamination_cli",
        ],
        "healthy": [
            "tests/audit/test_contamination.py::test_a_clean_eval_set_passes",
        ],
    },
    "audit.groups": {
        "planted": [
            "tests/audit/test_groups.py::test_row_split_leaks_patients",
        ],
        "healthy": [
            "tests/audit/test_groups.py::test_group_split_passes",
        ],
    },
    "scale.points": {
        "planted": [
            "tests/scale/test_diagnostics.py::test_two_distinct_sizes_warn_even_with_many_runs",
        ],
        "healthy": [
            "tests/scale/test_diagnostics.py::test_two_distinct_sizes_warn_even_with_many_runs",
        ],
    },
    "scale.grid_edge": {
        "planted": [
            "tests/scale/test_diagnostics.py::test_optimum_outside_the_grid_warns_and_inside_passes",
        ],
        "healthy": [
            "tests/scale/test_diagnostics.py::test_optimum_outside_the_grid_warns_and_inside_passes",
        ],
    },
    "scale.bound": {
        "planted": [
            "tests/scale/test_diagnostics.py::test_a_loss_that_rises_with_size_warns_at_the_exponent_bound",
        ],
        "healthy": [
            "tests/scale/test_diagnostics.py::test_no_floor_warns_at_the_bound_and_a_floor_passes",
        ],
    },
    "scale.flat": {
        "planted": [
            "tests/scale/test_diagnostics.py::test_narrow_range_is_flat_and_a_wide_range_is_not",
        ],
        "healthy": [
            "tests/scale/test_diagnostics.py::test_narrow_range_is_flat_and_a_wide_range_is_not",
        ],
    },
    "scale.residuals": {
        "planted": [
            "tests/scale/test_diagnostics.py::test_a_bent_law_leaves_waving_residuals[1000-0.1]",
        ],
        "healthy": [
            "tests/scale/test_diagnostics.py::test_the_right_law_with_the_same_noise_has_no_residual_pattern[1]",
        ],
    },
    "verdicts.deviation.metric": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_planted_deviation_is_found_in_the_data",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_by_the_plan_analysis_deviates_from_nothing",
        ],
    },
    "verdicts.deviation.column": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_planted_deviation_is_found_in_the_data",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_by_the_plan_analysis_deviates_from_nothing",
        ],
    },
    "verdicts.deviation.items": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_planted_deviation_is_found_in_the_data",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_by_the_plan_analysis_deviates_from_nothing",
        ],
    },
    "verdicts.deviation.dropped": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_planted_deviation_is_found_in_the_data",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_by_the_plan_analysis_deviates_from_nothing",
        ],
    },
    "verdicts.deviation.seeds": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_planted_deviation_is_found_in_the_data",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_by_the_plan_analysis_deviates_from_nothing",
        ],
    },
    "verdicts.deviation.after-verdict": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_results_produced_after_a_verdict_and_its_twin",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_results_produced_after_a_verdict_and_its_twin",
        ],
    },
    "verdicts.deviation.look": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_look_under_a_fixed_plan_and_a_sequential_plan_within_its_looks",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_a_look_under_a_fixed_plan_and_a_sequential_plan_within_its_looks",
        ],
    },
    "verdicts.deviation.margin": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_the_plan_changed_after_results_and_its_twin",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_plan_changed_after_results_and_its_twin",
        ],
    },
    "verdicts.deviation.alpha": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_the_plan_changed_after_results_and_its_twin",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_plan_changed_after_results_and_its_twin",
        ],
    },
    "verdicts.deviation.revised": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_the_plan_changed_after_results_and_its_twin",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_the_plan_changed_after_results_and_its_twin",
        ],
    },
    "verdicts.deviation.family": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_a_family_that_grew_beyond_its_declared_size_and_its_twin",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_a_family_that_grew_beyond_its_declared_size_and_its_twin",
        ],
    },
    "verdicts.deviation.registered-late": {
        "planted": [
            "tests/verdicts/test_deviations.py::test_results_older_than_the_plan_warn_and_newer_ones_pass",
        ],
        "healthy": [
            "tests/verdicts/test_deviations.py::test_results_older_than_the_plan_warn_and_newer_ones_pass",
        ],
    },
    "verdicts.design.power": {
        "planted": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
        "healthy": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
    },
    "verdicts.design.seeds-confounded": {
        "planted": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
        "healthy": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
    },
    "verdicts.design.item-sets": {
        "planted": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
        "healthy": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
    },
    "verdicts.design.control": {
        "planted": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
        "healthy": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
    },
    "verdicts.design.interventions": {
        "planted": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
        "healthy": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
    },
    "verdicts.design.family": {
        "planted": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
        "healthy": [
            "tests/verdicts/test_review.py::test_each_design_flaw_is_found_and_its_healthy_twin_passes",
        ],
    },
}
